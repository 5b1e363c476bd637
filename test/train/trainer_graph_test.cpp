// Updates replayed from CUDA graphs (train.cuda_graph) compute what eager updates compute. On a GPU
// (trainer_graph_gpu_test, label gpu): 20 updates with graphs equal 20 eager updates bit for bit
// in f32 and within bf16 tolerance in bf16, with dropout and 2 micro-batches per update, so the
// replayed graph must draw fresh random numbers per micro-batch from the device micro-step
// counter. With train.overlap_generator (the generator's backward on a second stream, joined
// inside the captured graph) 20 replayed updates give the bits of 20 without, in f32 and bf16. On
// the CPU (trainer_graph_test, unit) neither key changes a bit, and the device micro-step counter
// (kernels/step_scalars.h) follows the optimizer's update counter.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/communicator.h"
#include "kernels/step_scalars.h"
#include "models/host_transfer.h"
#include "test/common/test_util.h"
#include "test/train/tiny_run.h"
#include "train/trainer.h"

using namespace electra;

namespace {

struct Result {
  std::vector<float> params;
  UpdateReport report;
};

Result run_updates(Context& ctx, const test::TinyRun& run, bool cuda_graph, int64_t updates,
                   bool overlap_generator = false) {
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  PretrainConfig config = run.config();
  config.train.steps = updates;
  config.optimizer.schedule.total_steps = updates;
  config.log_every = updates;
  config.train.cuda_graph = cuda_graph;
  config.train.overlap_generator = overlap_generator;
  Trainer trainer(ctx, *comm, config, test::kTinyTokens, shards);
  CHECK(trainer.uses_cuda_graphs() == (cuda_graph && ctx.is_cuda()));
  trainer.init_weights();
  for (int64_t i = 0; i < updates; ++i) trainer.update();
  Result r;
  r.report = trainer.metrics();
  r.params = download_as<float>(ctx, trainer.model().store().flat_params());
  return r;
}

}  // namespace

#ifdef ELECTRA_TRAINER_TEST_GPU

TEST_CASE("20 updates replayed from CUDA graphs equal 20 eager updates", "[trainer][graph]") {
  const test::TinyRun run("graph_gpu");
  for (const Precision precision : {Precision::F32, Precision::BF16}) {
    INFO("precision " << precision_name(precision));
    Context ctx = Context::cuda(0, 3, precision);
    const Result graph = run_updates(ctx, run, true, 20);
    const Result eager = run_updates(ctx, run, false, 20);
    REQUIRE(graph.params.size() == eager.params.size());
    if (precision == Precision::F32) {
      CHECK(std::memcmp(graph.params.data(), eager.params.data(),
                        graph.params.size() * sizeof(float)) == 0);
      CHECK(graph.report.metrics.total_loss == eager.report.metrics.total_loss);
    } else {
      CHECK(test::normwise_error(graph.params, eager.params) <= 1e-2);
      CHECK(graph.report.metrics.total_loss ==
            Approx(eager.report.metrics.total_loss).epsilon(1e-2));
    }
    CHECK(graph.report.grad_norm > 0);
  }
}

TEST_CASE("replayed updates with the generator's backward on a second stream: the same bits",
          "[trainer][graph]") {
  const test::TinyRun run("overlap_gpu");
  for (const Precision precision : {Precision::F32, Precision::BF16}) {
    INFO("precision " << precision_name(precision));
    Context ctx = Context::cuda(0, 3, precision);
    const Result overlapped = run_updates(ctx, run, true, 20, true);
    const Result serial = run_updates(ctx, run, true, 20, false);
    REQUIRE(overlapped.params.size() == serial.params.size());
    CHECK(std::memcmp(overlapped.params.data(), serial.params.data(),
                      serial.params.size() * sizeof(float)) == 0);
    CHECK(overlapped.report.metrics.total_loss == serial.report.metrics.total_loss);
    CHECK(overlapped.report.grad_norm == serial.report.grad_norm);
  }
}

#else

TEST_CASE("train.overlap_generator changes no bit on the CPU", "[trainer][graph]") {
  const test::TinyRun run("overlap_cpu");
  Context ctx = Context::cpu(3, Precision::F32);
  const Result overlapped = run_updates(ctx, run, false, 3, true);
  const Result serial = run_updates(ctx, run, false, 3, false);
  CHECK(overlapped.params == serial.params);
  CHECK(overlapped.report.metrics.total_loss == serial.report.metrics.total_loss);
}

TEST_CASE("train.cuda_graph has no effect on the CPU: the same bits as eager updates",
          "[trainer][graph]") {
  const test::TinyRun run("graph_cpu");
  Context ctx = Context::cpu(3, Precision::F32);
  const Result graph = run_updates(ctx, run, true, 3);
  const Result eager = run_updates(ctx, run, false, 3);
  CHECK(graph.params == eager.params);
}

TEST_CASE("the device micro-step counter numbers update s's micro-batches s A .. s A + a - 1",
          "[trainer][graph]") {
  const test::TinyRun run("micro_step");
  Context ctx = Context::cpu(3, Precision::F32);
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  Trainer trainer(ctx, *comm, run.config(), test::kTinyTokens, shards);
  trainer.init_weights();
  const StepScalars& s = *step_scalars_of(trainer.model().step_scalars());
  CHECK(s.loss_scale == 0.5f);  // 1 / A, A = 2
  for (uint32_t update = 0; update < 3; ++update) {
    trainer.update();
    CHECK(s.micro_step == 2 * update + 1);  // the last micro-batch of the update
    CHECK(s.micro == 0);
  }
}

#endif
