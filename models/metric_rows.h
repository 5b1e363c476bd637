// The rows of the training metrics accumulator (f64 [kTrainMetrics]; the ops that add to it are
// kernels/train_metrics.h, train/device_metrics.h holds it): what each row means. Pre-training
// adds ELECTRA's metrics (ElectraPretrainer::accumulate_metrics, read back by step_metrics), a
// fine-tuning update its loss terms (ElectraFinetuner::accumulate_loss); both the gradient norm
// of each optimizer step and the non-finite count (DeviceMetrics). The rows before
// kMetricGradNorm are sums over the micro-batches since the last restart: divided by
// kMetricMicroBatches they are means (but kMetricMasked and kMetricTokens, totals).
#pragma once

#include "kernels/train_metrics.h"

namespace electra {

enum TrainMetric : int {
  kMetricGenLoss = 0,        // the generator's MLM loss, mean over the masked slots
  kMetricGenAccuracy = 1,    // its argmax == the original token, over the masked slots
  kMetricDiscLoss = 2,       // the discriminator's BCE, mean over its tokens (before disc_weight)
  kMetricDiscAccuracy = 3,   // over the same tokens
  kMetricDiscPrecision = 4,  // of the "replaced" prediction
  kMetricDiscRecall = 5,
  kMetricReplaced = 6,     // the fraction of its tokens that were replaced
  kMetricTotalLoss = 7,    // the trained loss (fine-tuning: the task loss)
  kMetricMlmLoss = 8,      // the discriminator-sized model's MLM loss (the MLM objectives)
  kMetricMlmAccuracy = 9,  // ... and accuracy
  kMetricMasked = 10,      // masked slots (a total)
  kMetricTokens = 11,      // the discriminator's tokens (a total)
  kMetricMicroBatches = 12,
  kMetricReward = 13,        // generator_training: adversarial: the mean reward of the samples
  kMetricBaselineLoss = 14,  // ... and the mean loss of its baseline
  kMetricGradNorm = 15,      // the last optimizer step's gradient norm (recorded, not summed)
  kMetricNonFinite = 16,  // micro-batches with a non-finite loss + updates with a non-finite norm
  kTrainMetrics = 17,
};

// Where a loss term is added: the total loss, counting a non-finite term.
inline constexpr TotalRows kLossTermRows{
    .total = kMetricTotalLoss, .count = kNoRow, .non_finite = kMetricNonFinite};

}  // namespace electra
