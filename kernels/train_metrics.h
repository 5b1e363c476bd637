// train_metrics: a training run's metrics, accumulated on the device into an f64 accumulator
// `acc` so that the host reads them only when it logs (one download). The ops know sums, ratios
// and the rows they add to, not what the rows mean: each op takes its rows as an argument (kNoRow:
// not recorded) and the caller assigns them (models/metric_rows.h: the pre-training and
// fine-tuning metrics).
//
// With r(a, b) = b > 0 ? a / b : 0 and, over the rows i of a loss op (loss [M] weighted, argmax
// and labels i32 [M], weights f32 [M]),
//   L = sum loss[i],  W = sum w[i],  C = sum w[i] [argmax[i] == labels[i]]:
//
// accumulate_means, once per micro-batch (M may be 0: then m = 0):
//   m = r(L, W)          acc[means.mean] += m,  acc[means.accuracy] += r(C, W),
//                        acc[means.weight] += W
//   with the counts of a binary classifier's loss op (kernels/disc_head.h, [kDiscCounts]: weight,
//   loss, correct, true / predicted / actual positives; unset: no binary part, b = 0):
//   b = r(loss, weight)  acc[binary.loss] += b,  acc[binary.accuracy] += r(correct, weight),
//                        acc[binary.precision] += r(TP, predicted),
//                        acc[binary.recall] += r(TP, actual),
//                        acc[binary.positive_rate] += r(actual, weight),
//                        acc[binary.weight] += weight
//   total = m + binary_factor * b  (m alone without counts):
//                        acc[total.total] += total,  acc[total.count] += 1,
//                        acc[total.non_finite] += 1 when total is not finite
// accumulate_value_means, over rows with a value v[i], a loss u[i] and weights w[i]:
//   a = r(sum v, W), l = r(sum u, W):
//                        acc[rows.value] += a,  acc[rows.loss] += l,  acc[total.total] += l,
//                        acc[total.non_finite] += 1 when a or l is not finite
// accumulate_loss, for a loss that is a weighted sum of per-row loss means, once per term, with
// S = sum loss:          acc[total.total] += weight * r(S, count),
//                        acc[total.non_finite] += 1 when that term is not finite
// (total.count is not used by the last two.) Dividing a row by a count row gives a mean over the
// micro-batches.
//
// Dtypes: acc f64 [n] with every row given < n; x f32 [1]. CPU loss, values and counts f32 or
// f64, CUDA f32. The sums are in f64; the CUDA kernel is one block with a fixed reduction tree
// (deterministic).
#pragma once

#include "kernels/disc_head.h"
#include "kernels/dispatch.h"

namespace electra {

constexpr int kNoRow = -1;  // a quantity the caller does not record

// Where accumulate_means puts the weighted means of a loss op's rows.
struct MeanRows {
  int mean = kNoRow, accuracy = kNoRow, weight = kNoRow;
};
// ... and the ratios of a binary classifier's counts.
struct BinaryRows {
  int loss = kNoRow, accuracy = kNoRow, precision = kNoRow, recall = kNoRow, positive_rate = kNoRow,
      weight = kNoRow;
};
// Where a loss term goes: the total, a count of the terms, the count of non-finite ones.
struct TotalRows {
  int total = kNoRow, count = kNoRow, non_finite = kNoRow;
};
// Where accumulate_value_means puts its two means.
struct ValueMeanRows {
  int value = kNoRow, loss = kNoRow;
};

// Throws Error naming `what` unless acc is an f64 vector holding every row in `rows` (-1: none).
void check_metrics_acc(const Tensor& acc, std::initializer_list<int> rows, const char* what);

struct AccumulateMeans {
  static constexpr const char* kName = "accumulate_means";
  In loss, argmax, labels, weights;
  In counts;  // unset: no binary classifier
  MeanRows means;
  BinaryRows binary;
  float binary_factor = 0;
  TotalRows total;
  Out acc;

  void check() const {
    const int64_t m = loss.numel();
    check_dtype(argmax, DType::I32, "accumulate_means argmax");
    check_dtype(labels, DType::I32, "accumulate_means labels");
    check_dtype(weights, DType::F32, "accumulate_means weights");
    ELECTRA_CHECK(argmax.numel() == m && labels.numel() == m && weights.numel() == m,
                  "accumulate_means: ", loss.str(), ", ", argmax.str(), ", ", labels.str(), ", ",
                  weights.str(), " must have one element per row");
    if (counts.data != nullptr) {
      check_shape(counts, {kDiscCounts}, "accumulate_means counts");
      ELECTRA_CHECK(counts.dtype == loss.dtype, "accumulate_means: counts ", counts.str(),
                    " and loss ", loss.str(), " differ in dtype");
    }
    check_metrics_acc(acc,
                      {means.mean, means.accuracy, means.weight, binary.loss, binary.accuracy,
                       binary.precision, binary.recall, binary.positive_rate, binary.weight,
                       total.total, total.count, total.non_finite},
                      "accumulate_means acc");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct AccumulateValueMeans {
  static constexpr const char* kName = "accumulate_value_means";
  In value, loss, weights;
  ValueMeanRows rows;
  TotalRows total;
  Out acc;

  void check() const {
    const int64_t m = value.numel();
    check_dtype(weights, DType::F32, "accumulate_value_means weights");
    ELECTRA_CHECK(loss.numel() == m && weights.numel() == m && loss.dtype == value.dtype,
                  "accumulate_value_means: ", value.str(), ", ", loss.str(), ", ", weights.str(),
                  " must have one element per row");
    check_metrics_acc(acc, {rows.value, rows.loss, total.total, total.non_finite},
                      "accumulate_value_means acc");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct AccumulateLoss {
  static constexpr const char* kName = "accumulate_loss";
  In loss;
  double weight = 0;
  double count = 0;
  TotalRows total;
  Out acc;

  void check() const {
    check_metrics_acc(acc, {total.total, total.non_finite}, "accumulate_loss acc");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
