// The Trainer's update performs no host synchronisation: with the transfer counter of the
// engine's copy helpers (engine/device.h) on, an update with no logging due makes exactly the
// planned uploads (one per micro-batch: its four input planes) and no download; a logging update
// adds the one planned download of the metrics accumulator. The same source runs on the CPU
// (unit) and, built with ELECTRA_TRAINER_TEST_GPU, on a GPU (label gpu): this is how the
// GPU-readiness of an update is proven without a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/communicator.h"
#include "engine/device.h"
#include "models/metric_rows.h"
#include "test/models/tiny_pretrainer.h"
#include "test/train/tiny_run.h"
#include "train/trainer.h"

using namespace electra;

namespace {

namespace fs = std::filesystem;

Context make_context() {
#ifdef ELECTRA_TRAINER_TEST_GPU
  return Context::cuda(0, 3, Precision::F32);
#else
  return Context::cpu(3, Precision::F32);
#endif
}

using test::TinyRun;
const SpecialTokens kTokens = test::kTinyTokens;

}  // namespace

TEST_CASE("an update transfers only its batch; a logging update adds one metrics download",
          "[trainer]") {
  const TinyRun run("transfers");
  Context ctx = make_context();
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  Trainer trainer(ctx, *comm, run.config(), kTokens, shards);
  trainer.init_weights();
  ctx.synchronize();
  const int64_t input_bytes = trainer.model().input().nbytes();
  REQUIRE(input_bytes == 4 * 3 * 16 * 4);
  REQUIRE(trainer.local_accumulation() == 2);

  set_transfer_counting(true);
  for (int64_t step = 1; step <= 3; ++step) {
    INFO("update " << step);
    trainer.update();
    REQUIRE_FALSE(trainer.metrics_due());
    ctx.synchronize();
    const TransferCounts c = transfer_counts(ctx.stream());
    CHECK(c.uploads == 2 * step);
    CHECK(c.upload_bytes == 2 * step * input_bytes);
    CHECK(c.downloads == 0);
    CHECK(c.download_bytes == 0);
  }
  trainer.update();
  REQUIRE(trainer.metrics_due());
  const UpdateReport report = trainer.metrics();
  const TransferCounts c = transfer_counts(ctx.stream());
  set_transfer_counting(false);
  CHECK(c.uploads == 8);
  CHECK(c.downloads == 1);
  CHECK(c.download_bytes == kTrainMetrics * 8);
  CHECK(report.step == 4);
  CHECK(std::isfinite(report.metrics.total_loss));
  CHECK(report.metrics.masked > 0);
  CHECK(report.grad_norm > 0);
  CHECK(report.lr == Approx(trainer.optimizer().lr_at(3)));
}

TEST_CASE("the guard reads a non-finite loss when the metrics are read; the update was skipped",
          "[trainer]") {
  const TinyRun run("guard");
  Context ctx = make_context();
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  Trainer trainer(ctx, *comm, run.config(), kTokens, shards);
  trainer.init_weights();
  trainer.update();
  (void)trainer.metrics();
  // A NaN in one weight: every loss and gradient norm becomes NaN.
  const Tensor params = trainer.model().store().flat_params();
  std::vector<float> before = download_as<float>(ctx, params);
  before[0] = NAN;
  upload_to(ctx, params, before);
  trainer.update();
  const std::vector<float> after = download_as<float>(ctx, params);
  CHECK(std::memcmp(after.data(), before.data(), after.size() * sizeof(float)) == 0);
  CHECK_THROWS_AS(trainer.metrics(), NonFiniteUpdate);
  // The count was read: the next read reports the next update again.
  trainer.update();
  CHECK_THROWS_WITH(trainer.save(nullptr), Catch::Contains("not finite"));
  CHECK_FALSE(fs::exists(run.dir / "run"));
}

// masking.mask_prob_schedule: linear: the first update masks at mask_prob and the last
// at mask_prob_end, exactly as constant-rate runs at those rates do on the same batches.
TEST_CASE("a linear masking-rate schedule moves from mask_prob to mask_prob_end", "[trainer]") {
  const TinyRun run("mask_schedule");
  Context ctx = make_context();
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  // The masked slots of the first and the last update of a run of `config`.
  auto masked = [&](const PretrainConfig& config) {
    Trainer trainer(ctx, *comm, config, kTokens, shards);
    trainer.init_weights();
    std::vector<double> out;
    for (int64_t step = 1; step <= config.train.steps; ++step) {
      trainer.update();
      const double m = trainer.metrics().metrics.masked;
      if (step == 1 || step == config.train.steps) out.push_back(m);
    }
    return out;
  };
  PretrainConfig linear = run.config();
  linear.masking.linear_schedule = true;
  linear.masking.mask_prob = 0.5;
  linear.masking.mask_prob_end = 0.0625;
  CHECK(linear.masking.mask_prob_at(0, 10) == 0.5f);
  CHECK(linear.masking.mask_prob_at(9, 10) == 0.0625f);
  CHECK(linear.masking.mask_prob_at(3, 10) == Approx(0.5 - 0.4375 / 3));
  PretrainConfig high = run.config(), low = run.config();
  high.masking.mask_prob = 0.5;
  low.masking.mask_prob = 0.0625;
  const std::vector<double> scheduled = masked(linear);
  const std::vector<double> at_high = masked(high);
  const std::vector<double> at_low = masked(low);
  CHECK(scheduled[0] == at_high[0]);
  CHECK(scheduled[1] == at_low[1]);
  CHECK(scheduled[0] > 2 * scheduled[1]);
}
