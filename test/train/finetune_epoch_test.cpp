// Fine-tuning's updates (apps FinetuneEpoch) share the Trainer's device metrics accumulator and
// guard (train/device_metrics.h): with the transfer counter of the engine's copy helpers on, an
// update with no progress line due makes exactly the planned uploads (the batch's five planes of a
// classification task) and no download; a line adds the one download of the accumulator. The
// updates and the logged loss equal those of updates that read the loss back every time (the
// previous loop), and a NaN is reported as the one-line error naming the task and the update.
// Built with ELECTRA_TRAINER_TEST_GPU the same source runs on a GPU (label gpu).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "apps/finetune_common.h"
#include "engine/device.h"
#include "models/host_transfer.h"
#include "models/metric_rows.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

Context make_context() {
#ifdef ELECTRA_TRAINER_TEST_GPU
  return Context::cuda(0, 5, Precision::F32);
#else
  return Context::cpu(5, Precision::F32);
#endif
}

constexpr int64_t kBatch = 3, kSeq = 16, kUpdates = 4;

FinetuneOptions tiny_options() {
  FinetuneOptions o;
  o.batch = kBatch;
  o.seq_len = kSeq;
  return o;
}

// Update `step`'s batch: the tiny pre-training batch with labels that change with the step.
FinetuneBatch batch_of(int64_t step) {
  const HostBatch host = test::tiny_batch();
  FinetuneBatch b;
  b.ids = host.ids;
  b.segment_ids = host.segment_ids;
  b.labels = {static_cast<int32_t>(step % 2), 1, 0};
  return b;
}

apps::FinetuneSettings tiny_settings() {
  apps::FinetuneSettings s;
  s.lr = 1e-3;
  s.layerwise_lr_decay = 0.8;
  s.warmup_fraction = 0.25;
  return s;
}

struct Tiny {
  ElectraFinetuner model;
  apps::FinetuneOptimizer opt;
  explicit Tiny(Context& ctx)
      : model(ctx, test::tiny_electra_config(0.1f).discriminator, TaskHeadConfig{}, tiny_options()),
        opt(ctx, model, tiny_settings(), kUpdates) {
    model.init_weights(ctx, 3);
  }
  std::vector<float> params(Context& ctx) const {
    return download_as<float>(ctx, model.store().flat_params());
  }
};

}  // namespace

TEST_CASE("a fine-tuning update transfers only its batch and a progress line one download",
          "[finetune_epoch]") {
  Context ctx = make_context();
  Tiny ours(ctx), reference(ctx);
  // The reference: the loss read back after every update, the optimizer's counter set from the
  // host (the loop fine-tuning had before it shared the Trainer's pieces).
  std::vector<double> losses;
  for (int64_t step = 0; step < kUpdates; ++step) {
    reference.model.zero_grads(ctx);
    reference.model.step(ctx, batch_of(step), static_cast<uint32_t>(step));
    losses.push_back(reference.model.metrics(ctx).loss);
    reference.opt.optimizer->step(ctx, step);
  }

  std::vector<FinetuneBatch> batches;
  for (int64_t step = 0; step < kUpdates; ++step) batches.push_back(batch_of(step));
  apps::FinetuneEpoch epoch(ctx, "tiny", 0, 1, kUpdates, kUpdates, kUpdates);
  ctx.synchronize();
  // ids, segment ids, mask (i32 [B, T]); labels (i32 [B]); weights (f32 [B]).
  const int64_t batch_bytes = 3 * kBatch * kSeq * 4 + 2 * kBatch * 4;
  set_transfer_counting(true);
  for (int64_t step = 0; step + 1 < kUpdates; ++step) {
    INFO("update " << step + 1);
    const std::optional<double> line =
        epoch.update(ctx, ours.model, ours.opt, batches[step], step, step);
    CHECK_FALSE(line.has_value());
    ctx.synchronize();
    const TransferCounts c = transfer_counts(ctx.stream());
    CHECK(c.uploads == 5 * (step + 1));
    CHECK(c.upload_bytes == batch_bytes * (step + 1));
    CHECK(c.downloads == 0);
    CHECK(c.download_bytes == 0);
  }
  const std::optional<double> line =
      epoch.update(ctx, ours.model, ours.opt, batches.back(), kUpdates - 1, kUpdates - 1);
  const TransferCounts c = transfer_counts(ctx.stream());
  set_transfer_counting(false);
  CHECK(c.uploads == 5 * kUpdates);
  CHECK(c.downloads == 1);
  CHECK(c.download_bytes == kTrainMetrics * 8);

  REQUIRE(line.has_value());
  double mean = 0;
  for (double l : losses) mean += l / kUpdates;
  CHECK(std::isfinite(*line));
  CHECK(*line == Approx(mean).epsilon(1e-9));
  const std::vector<float> a = ours.params(ctx), b = reference.params(ctx);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("a NaN in fine-tuning is the one-line error naming the task and the update",
          "[finetune_epoch]") {
  Context ctx = make_context();
  Tiny tiny(ctx);
  apps::FinetuneEpoch epoch(ctx, "tiny", 0, 1, kUpdates, kUpdates, 2);
  CHECK(epoch.update(ctx, tiny.model, tiny.opt, batch_of(0), 0, 0) == std::nullopt);
  CHECK(epoch.update(ctx, tiny.model, tiny.opt, batch_of(1), 1, 1).has_value());
  // A NaN in one weight: every loss and gradient norm becomes NaN.
  const Tensor params = tiny.model.store().flat_params();
  std::vector<float> before = download_as<float>(ctx, params);
  before[0] = NAN;
  upload_to(ctx, params, before);
  tiny.model.weights().refresh_compute(ctx);
  CHECK(epoch.update(ctx, tiny.model, tiny.opt, batch_of(2), 2, 2) == std::nullopt);
  std::string message;
  try {
    epoch.update(ctx, tiny.model, tiny.opt, batch_of(3), 3, 3);
  } catch (const UserError& e) {
    message = e.what();
  }
  CHECK(message.rfind("finetune tiny: update 4: the loss is not finite", 0) == 0);
  CHECK(message.find("since update 2") != std::string::npos);
  CHECK(message.find("lower finetune.lr?") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
  const std::vector<float> after = download_as<float>(ctx, params);
  CHECK(std::memcmp(after.data(), before.data(), after.size() * sizeof(float)) == 0);
}
