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
#include "kernels/train_metrics.h"
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
