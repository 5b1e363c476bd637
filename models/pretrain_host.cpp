// ElectraPretrainer's host side: packing a batch into the input planes, the metrics read back,
// and the synchronising conveniences of tests and tools.
#include <algorithm>

#include "kernels/masking.h"
#include "models/host_transfer.h"
#include "models/metric_rows.h"
#include "models/pretrain_network.h"

namespace electra {

StepMetrics step_metrics(const std::vector<double>& acc) {
  ELECTRA_CHECK(acc.size() == kTrainMetrics, "step_metrics: ", acc.size(), " values");
  const double n = std::max(acc[kMetricMicroBatches], 1.0);
  StepMetrics m;
  m.gen_loss = acc[kMetricGenLoss] / n;
  m.gen_accuracy = acc[kMetricGenAccuracy] / n;
  m.disc_loss = acc[kMetricDiscLoss] / n;
  m.disc_accuracy = acc[kMetricDiscAccuracy] / n;
  m.disc_precision = acc[kMetricDiscPrecision] / n;
  m.disc_recall = acc[kMetricDiscRecall] / n;
  m.replaced_fraction = acc[kMetricReplaced] / n;
  m.total_loss = acc[kMetricTotalLoss] / n;
  m.mlm_loss = acc[kMetricMlmLoss] / n;
  m.mlm_accuracy = acc[kMetricMlmAccuracy] / n;
  m.reward = acc[kMetricReward] / n;
  m.baseline_loss = acc[kMetricBaselineLoss] / n;
  m.masked = acc[kMetricMasked];  // totals over the micro-steps
  m.tokens = acc[kMetricTokens];
  return m;
}

void ElectraPretrainer::pack_batch(const HostBatch& batch, int32_t* planes) const {
  const int64_t b = options_.batch, t = options_.seq_len;
  const size_t bt = static_cast<size_t>(b * t);
  ELECTRA_USER_CHECK(batch.ids.size() == bt && batch.segment_ids.size() == bt,
                     "pretrain: a batch needs ", b, " x ", t, " = ", bt,
                     " ids and segment ids, got ", batch.ids.size(), " and ",
                     batch.segment_ids.size());
  const int32_t vocab = config_.discriminator.vocab_size;
  const int32_t types = config_.discriminator.type_vocab_size;
  const SpecialTokens& tok = options_.tokens;
  int32_t* ids = planes;
  int32_t* segments = planes + bt;
  int32_t* mask = planes + 2 * bt;
  float* weights = reinterpret_cast<float*>(planes + 3 * bt);
  double masked_slots = 0, tokens = 0;
  for (int64_t s = 0; s < b; ++s) {
    int non_pad = 0, candidates = 0;
    for (int64_t i = 0; i < t; ++i) {
      const size_t at = static_cast<size_t>(s * t + i);
      const int32_t id = batch.ids[at], seg = batch.segment_ids[at];
      ELECTRA_USER_CHECK(id >= 0 && id < vocab, "pretrain: token id ", id, " at (sequence ", s,
                         ", position ", i, ") is outside the vocabulary [0, ", vocab, ")");
      ELECTRA_USER_CHECK(seg >= 0 && seg < types, "pretrain: segment id ", seg, " at (sequence ", s,
                         ", position ", i, ") is outside [0, ", types, ")");
      const bool real = id != tok.pad;
      ids[at] = id;
      segments[at] = seg;
      mask[at] = real;
      weights[at] = real ? 1.0f : 0.0f;
      non_pad += real;
      candidates += real && id != tok.cls && id != tok.sep;
    }
    // The masking op's k for this sequence (kernels/masking.h).
    const int k = std::max(1, masking_target_count(mask_prob_, non_pad));
    masked_slots += static_cast<double>(std::min<int64_t>({slots_, candidates, k}));
    tokens += non_pad;
  }
  // The loss normalisers (computed again on the device, kernels/step_scalars.h) must not be 0.
  ELECTRA_USER_CHECK(tokens > 0, "pretrain: a batch without any non-padding token");
  ELECTRA_USER_CHECK(masked_slots > 0, "pretrain: a batch without any maskable token");
}

void ElectraPretrainer::step(Context& ctx, const HostBatch& batch, uint32_t micro_step,
                             float loss_scale, const GradientsReady& ready) {
  pack_batch(batch, step_planes_.data());
  upload_to(ctx, input_, step_planes_);
  set_step(ctx, micro_step, loss_scale);
  const Corruption corruption = corrupt(ctx);
  backward(ctx, forward(ctx, corruption), ready);
}

StepMetrics ElectraPretrainer::metrics(Context& ctx, const Corruption& corruption) {
  const Tensor& acc = network_->metrics;
  zero_tensor(ctx.stream(), acc);
  accumulate_metrics(ctx, corruption, acc);
  return step_metrics(download_as<double>(ctx, acc));
}

}  // namespace electra
