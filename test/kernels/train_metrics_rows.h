// The accumulator rows the train_metrics tests give the ops (train_metrics_test.cpp and
// train_metrics_cases.cpp): any layout works, the ops know none (ELECTRA's is
// models/metric_rows.h).
#pragma once

#include "kernels/train_metrics.h"

namespace electra::test {

enum MetricRow : int {
  kMean,
  kAccuracy,
  kWeight,
  kBinaryLoss,
  kBinaryAccuracy,
  kPrecision,
  kRecall,
  kPositiveRate,
  kBinaryWeight,
  kTotal,
  kCount,
  kSecondMean,  // a second loss op's rows (a masked LM beside the binary classifier)
  kSecondAccuracy,
  kValue,
  kValueLoss,
  kNonFinite,
  kUnused,  // no op is given this row: it must keep its value
  kRows,
};

constexpr MeanRows kMeans{.mean = kMean, .accuracy = kAccuracy, .weight = kWeight};
constexpr BinaryRows kBinary{.loss = kBinaryLoss,
                             .accuracy = kBinaryAccuracy,
                             .precision = kPrecision,
                             .recall = kRecall,
                             .positive_rate = kPositiveRate,
                             .weight = kBinaryWeight};
constexpr TotalRows kTotals{.total = kTotal, .count = kCount, .non_finite = kNonFinite};

}  // namespace electra::test
