// The MPI communicator and the bucketed gradient all-reduce under `mpirun -np 2` (label dist):
//   - rank, size and node-local rank; sums and averages of f32 / f64 / i32 tensors; broadcasts;
//     host collectives; a GPU tensor is refused with an Error;
//   - two ranks, each running one micro-batch of the tiny pre-trainer with GradSync (small
//     buckets), end up with the gradient that one process accumulates over both micro-batches
//     (fp32 sums in another order: normwise 1e-6), identical on both ranks.
// Every rank runs the Catch2 session; the job fails when any rank has a failure.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "engine/communicator.h"
#include "engine/mpi_check.h"
#include "models/grad_sync.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

Communicator* g_comm = nullptr;

template <class T>
Tensor view(std::vector<T>& v) {
  return Tensor::view_of(v.data(), Device::CPU, {static_cast<int64_t>(v.size())});
}

std::vector<float> grads_of(const ElectraPretrainer& model) {
  const Tensor& g = model.store().flat_grads();
  return std::vector<float>(g.ptr<float>(), g.ptr<float>() + g.numel());
}

}  // namespace

TEST_CASE("two ranks on one node", "[mpi]") {
  Communicator& comm = *g_comm;
  CHECK(std::string(comm.backend()) == "mpi");
  CHECK(comm.size() == 2);
  CHECK(comm.local_size() == 2);
  CHECK(comm.local_rank() == comm.rank());
}

TEST_CASE("tensor and host collectives", "[mpi]") {
  Communicator& comm = *g_comm;
  const int r = comm.rank();
  std::vector<float> f = {1.0f + r, -0.5f * r, 3.0f};
  comm.all_reduce(view(f), ReduceOp::kSum, nullptr);
  CHECK(f == std::vector<float>{3.0f, -0.5f, 6.0f});
  std::vector<double> d = {1.0 + r, 10.0 * r};
  comm.all_reduce(view(d), ReduceOp::kAverage, nullptr);
  CHECK(d == std::vector<double>{1.5, 5.0});
  std::vector<int32_t> i = {r, 4 + r};
  comm.all_reduce(view(i), ReduceOp::kSum, nullptr);
  CHECK(i == std::vector<int32_t>{1, 9});

  std::vector<float> b = {static_cast<float>(r), 2.0f * r};
  comm.broadcast(view(b), 1, nullptr);
  CHECK(b == std::vector<float>{1.0f, 2.0f});

  std::vector<double> host = {0.25 * r, 1.0};
  comm.all_reduce_host(host, ReduceOp::kAverage);
  CHECK(host == std::vector<double>{0.125, 1.0});
  std::vector<uint64_t> words = {static_cast<uint64_t>(100 + r), 7};
  comm.broadcast_host(words, 0);
  CHECK(words == std::vector<uint64_t>{100, 7});
  comm.barrier();

  Tensor gpu = view(f);
  gpu.device = Device::CUDA;
  CHECK_THROWS_WITH(comm.all_reduce(gpu, ReduceOp::kSum, nullptr),
                    Catch::Contains("MPI reduces CPU tensors"));
}

TEST_CASE("two ranks with GradSync compute the gradient one process accumulates", "[mpi]") {
  Communicator& comm = *g_comm;
  Context ctx = Context::cpu(3);
  const ElectraConfig config = test::tiny_electra_config(0.1f);
  const HostBatch batch = test::tiny_batch();

  // One process: micro-steps 0 and 1, each scaled by 1/2.
  ElectraPretrainer single(ctx, config, test::tiny_options());
  single.init_weights(ctx, 5);
  single.zero_grads(ctx);
  single.step(ctx, batch, 0, 0.5f);
  single.step(ctx, batch, 1, 0.5f);
  const std::vector<float> want = grads_of(single);

  // Rank r: micro-step r, scaled by 1/2, summed over the ranks in buckets during the backward.
  ElectraPretrainer model(ctx, config, test::tiny_options());
  model.init_weights(ctx, 5);
  GradSync sync(comm, model.store(), 4096);
  REQUIRE(sync.buckets().size() > 4);
  const GradientsReady ready = [&](Context& c, ParamSpan span) { sync.gradients_ready(c, span); };
  model.zero_grads(ctx);
  sync.begin_micro_batch(true);
  model.step(ctx, batch, static_cast<uint32_t>(comm.rank()), 0.5f, ready);
  sync.finish(ctx);
  const std::vector<float> got = grads_of(model);
  CHECK(test::normwise_error(got, want) < 1e-6);

  // Both ranks hold the same reduced gradient.
  std::vector<float> other = got;
  comm.broadcast(view(other), 1, nullptr);
  CHECK(other == got);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int failed = 0;
  {
    std::unique_ptr<Communicator> comm = make_mpi_communicator();
    g_comm = comm.get();
    Catch::Session session;
    const int rc = session.applyCommandLine(argc, argv);
    failed = rc != 0 ? 1 : session.run();
    std::vector<double> all = {static_cast<double>(failed != 0)};
    comm->all_reduce_host(all, ReduceOp::kSum);
    if (comm->rank() == 0) std::printf("%g of %d ranks had failures\n", all[0], comm->size());
    failed = all[0] > 0;
  }
  MPI_Finalize();
  return failed;
}
