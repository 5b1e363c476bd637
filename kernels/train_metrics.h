// train_metrics: the pre-training update's metrics, accumulated on the device so that the host
// reads them only when it logs (one download of kTrainMetrics doubles).
//
// accumulate_pretrain_metrics, once per micro-batch, from the loss ops' outputs:
//   gen_loss [M] (per slot, weighted), argmax [M] i32, original [M] i32, weights [M] f32 (1 for a
//   used slot), disc counts [kDiscCounts] (kernels/disc_head.h), with
//   W = sum weights, L = sum gen_loss, C = sum weights * (argmax == original),
//   r(a, b) = b > 0 ? a / b : 0:
//     acc[kMetricGenLoss]      += r(L, W)          acc[kMetricGenAccuracy]   += r(C, W)
//     acc[kMetricDiscLoss]     += r(loss, weight)  acc[kMetricDiscAccuracy]  += r(correct, weight)
//     acc[kMetricDiscPrecision]+= r(TP, predicted) acc[kMetricDiscRecall]    += r(TP, actual)
//     acc[kMetricReplaced]     += r(actual, weight)
//     acc[kMetricTotalLoss]    += r(L, W) + disc_weight * r(loss, weight)
//     acc[kMetricMasked] += W,  acc[kMetricTokens] += weight,  acc[kMetricMicroBatches] += 1
//     acc[kMetricNonFinite]    += 1 when that total loss is not finite
// accumulate_mlm_metrics, after it when the objective trains a discriminator-sized masked LM
// (models/objective.h: replace-mlm, all-tokens-mlm), from that model's loss op with the same
// definitions of L, W, C over its rows:
//     acc[kMetricMlmLoss] += r(L, W)   acc[kMetricMlmAccuracy] += r(C, W)
//     acc[kMetricTotalLoss] += r(L, W),  acc[kMetricNonFinite] += 1 when r(L, W) is not finite
// accumulate_reinforce_metrics, after it when the generator is trained adversarially
// (kernels/reinforce.h), from reward [M], baseline_loss [M] and the slot weights [M], with
// W = sum weights:
//     acc[kMetricReward] += r(sum reward, W)   acc[kMetricBaselineLoss] += r(sum baseline_loss, W)
//     acc[kMetricTotalLoss] += r(sum baseline_loss, W),  acc[kMetricNonFinite] += 1 when either
//     mean is not finite
// record_grad_norm, once per update after the optimizer's norm:
//     acc[kMetricGradNorm] = norm,  acc[kMetricNonFinite] += 1 when norm is not finite
// Dividing the first ten and kMetricReward, kMetricBaselineLoss by kMetricMicroBatches gives the
// means over the update's micro-batches. accumulate_loss, for a loss that is a weighted sum of
// per-row loss means (fine-tuning), once per term: with S = sum loss,
//     acc[kMetricTotalLoss] += weight * r(S, count),  acc[kMetricNonFinite] += 1 when that term
//     is not finite
//
// Dtypes: acc f64 [kTrainMetrics]; norm f32 [1]. CPU gen_loss, loss and counts f32 or f64, CUDA
// f32.
// The sums are in f64; the CUDA kernel is one block with a fixed reduction tree (deterministic).
#pragma once

#include "kernels/disc_head.h"
#include "kernels/dispatch.h"

namespace electra {

enum TrainMetric : int {
  kMetricGenLoss = 0,
  kMetricGenAccuracy = 1,
  kMetricDiscLoss = 2,
  kMetricDiscAccuracy = 3,
  kMetricDiscPrecision = 4,
  kMetricDiscRecall = 5,
  kMetricReplaced = 6,
  kMetricTotalLoss = 7,
  kMetricMlmLoss = 8,
  kMetricMlmAccuracy = 9,
  kMetricMasked = 10,
  kMetricTokens = 11,
  kMetricMicroBatches = 12,
  kMetricReward = 13,        // generator_training: adversarial: the mean reward of the samples
  kMetricBaselineLoss = 14,  // ... and the mean loss of its baseline
  kMetricGradNorm = 15,
  kMetricNonFinite = 16,  // micro-batches with a non-finite loss + updates with a non-finite norm
  kTrainMetrics = 17,
};

// Throws Error naming `what` unless acc is the f64 [kTrainMetrics] accumulator.
inline void check_metrics_acc(const Tensor& acc, const char* what) {
  check_tensor(acc, {kTrainMetrics}, DType::F64, what);
}

struct AccumulatePretrainMetrics {
  static constexpr const char* kName = "accumulate_pretrain_metrics";
  In gen_loss, argmax, original, weights, counts;
  float disc_weight = 0;
  Out acc;

  void check() const {
    const int64_t m = gen_loss.numel();
    check_dtype(argmax, DType::I32, "accumulate_pretrain_metrics argmax");
    check_dtype(original, DType::I32, "accumulate_pretrain_metrics original");
    check_dtype(weights, DType::F32, "accumulate_pretrain_metrics weights");
    ELECTRA_CHECK(argmax.numel() == m && original.numel() == m && weights.numel() == m,
                  "accumulate_pretrain_metrics: ", gen_loss.str(), ", ", argmax.str(), ", ",
                  original.str(), ", ", weights.str(), " must have one element per slot");
    check_shape(counts, {kDiscCounts}, "accumulate_pretrain_metrics counts");
    ELECTRA_CHECK(counts.dtype == gen_loss.dtype, "accumulate_pretrain_metrics: counts ",
                  counts.str(), " and gen_loss ", gen_loss.str(), " differ in dtype");
    check_metrics_acc(acc, "accumulate_pretrain_metrics acc");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct AccumulateMlmMetrics {
  static constexpr const char* kName = "accumulate_mlm_metrics";
  In loss, argmax, labels, weights;
  Out acc;

  void check() const {
    const int64_t m = loss.numel();
    check_dtype(argmax, DType::I32, "accumulate_mlm_metrics argmax");
    check_dtype(labels, DType::I32, "accumulate_mlm_metrics labels");
    check_dtype(weights, DType::F32, "accumulate_mlm_metrics weights");
    ELECTRA_CHECK(argmax.numel() == m && labels.numel() == m && weights.numel() == m,
                  "accumulate_mlm_metrics: ", loss.str(), ", ", argmax.str(), ", ", labels.str(),
                  ", ", weights.str(), " must have one element per row");
    check_metrics_acc(acc, "accumulate_mlm_metrics acc");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct AccumulateReinforceMetrics {
  static constexpr const char* kName = "accumulate_reinforce_metrics";
  In reward, baseline_loss, weights;
  Out acc;

  void check() const {
    const int64_t m = reward.numel();
    check_dtype(weights, DType::F32, "accumulate_reinforce_metrics weights");
    ELECTRA_CHECK(
        baseline_loss.numel() == m && weights.numel() == m && baseline_loss.dtype == reward.dtype,
        "accumulate_reinforce_metrics: ", reward.str(), ", ", baseline_loss.str(), ", ",
        weights.str(), " must have one element per slot");
    check_metrics_acc(acc, "accumulate_reinforce_metrics acc");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct RecordGradNorm {
  static constexpr const char* kName = "record_grad_norm";
  In norm;
  Out acc;

  void check() const {
    check_tensor(norm, {1}, DType::F32, "record_grad_norm norm");
    check_metrics_acc(acc, "record_grad_norm acc");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct AccumulateLoss {
  static constexpr const char* kName = "accumulate_loss";
  In loss;
  double weight = 0;
  double count = 0;
  Out acc;

  void check() const { check_metrics_acc(acc, "accumulate_loss acc"); }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
