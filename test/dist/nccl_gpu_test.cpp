// The NCCL communicator with one rank on one GPU (label gpu; skipped without a GPU): its
// collectives work on device tensors, and three f32 updates of the tiny pre-trainer with two
// micro-batches each, its gradients reduced through NCCL in small buckets on the communicator's
// stream (GradSync), give exactly the parameters of the same run without a communicator (a sum
// over one rank is a copy, so the bits must match).
#include <catch2/catch.hpp>
#include <vector>

#include "engine/communicator.h"
#include "models/grad_sync.h"
#include "optim/optimizer.h"
#include "test/common/device_util.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

// The model, its optimizer and state on ctx's device.
struct Trainer {
  Trainer(Context& ctx, const OptimizerConfig& config)
      : model(ctx, test::tiny_electra_config(0.1f), test::tiny_options()),
        state("optimizer", ctx.device(), Optimizer::state_bytes(model.store(), config.kind)),
        optimizer(ctx, model.store(), config, state) {
    model.init_weights(ctx, 4);
  }

  // One update of two micro-batches (micro-steps 2s and 2s + 1, each scaled by 1/2).
  void update(Context& ctx, int64_t step, const HostBatch& batch, GradSync* sync) {
    model.zero_grads(ctx);
    for (int micro = 0; micro < 2; ++micro) {
      if (sync != nullptr) sync->begin_micro_batch(micro == 1);
      GradientsReady ready;
      if (sync != nullptr) {
        ready = [sync](Context& c, ParamSpan span) { sync->gradients_ready(c, span); };
      }
      model.step(ctx, batch, static_cast<uint32_t>(2 * step + micro), 0.5f, ready);
      losses.push_back(model.metrics(ctx).total_loss);
    }
    if (sync != nullptr) sync->finish(ctx);
    optimizer.step(ctx, step);
  }

  ElectraPretrainer model;
  Arena state;
  Optimizer optimizer;
  std::vector<double> losses;
};

}  // namespace

TEST_CASE("NCCL collectives with one rank", "[nccl][gpu]") {
  Context ctx = Context::cuda(0, 1, Precision::F32);
  std::unique_ptr<Communicator> comm = make_nccl_communicator(make_single_communicator(), 0, 60);
  CHECK(std::string(comm->backend()) == "nccl");
  CHECK(comm->size() == 1);
  CHECK(comm->rank() == 0);
  Arena arena("test", Device::CUDA, 1 << 16);
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.125f};
  const Tensor t = test::upload(ctx, arena, values, {4});
  comm->all_reduce(t, ReduceOp::kSum, ctx.stream());
  comm->all_reduce(t, ReduceOp::kAverage, ctx.stream());
  comm->broadcast(t, 0, ctx.stream());
  CHECK(test::download<float>(ctx, t) == values);
  std::vector<double> host = {2.5};
  comm->all_reduce_host(host, ReduceOp::kSum);
  CHECK(host[0] == 2.5);
  std::vector<float> cpu = values;
  CHECK_THROWS_AS(
      comm->all_reduce(Tensor::view_of(cpu.data(), Device::CPU, {4}), ReduceOp::kSum, ctx.stream()),
      Error);
}

TEST_CASE("NCCL with one rank equals the single-process GPU run", "[nccl][gpu]") {
  Context ctx = Context::cuda(0, 21, Precision::F32);
  OptimizerConfig config;
  config.schedule.peak = 1e-3;
  config.schedule.warmup_steps = 1;
  config.schedule.total_steps = 10;
  const HostBatch batch = test::tiny_batch();

  Trainer single(ctx, config);
  Trainer reduced(ctx, config);
  std::unique_ptr<Communicator> comm = make_nccl_communicator(make_single_communicator(), 0, 60);
  GradSync sync(*comm, reduced.model.store(), 16384);
  REQUIRE(sync.buckets().size() > 4);
  for (int64_t step = 0; step < 3; ++step) {
    single.update(ctx, step, batch, nullptr);
    reduced.update(ctx, step, batch, &sync);
  }
  CHECK(reduced.losses == single.losses);
  CHECK(test::download<float>(ctx, reduced.model.store().flat_params()) ==
        test::download<float>(ctx, single.model.store().flat_params()));
  CHECK(test::download<float>(ctx, reduced.optimizer.m()) ==
        test::download<float>(ctx, single.optimizer.m()));
}
