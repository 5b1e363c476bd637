// The metric functions of GLUE's tasks (data/glue_metrics.h picks them per task): accuracy,
// binary F1, Matthews correlation, Pearson and Spearman correlation. All return fractions (not
// percentages); inputs are parallel arrays (prediction i belongs to gold i) of equal, non-zero
// length.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace electra {

// Fraction of i with predicted[i] == gold[i].
double accuracy(std::span<const int32_t> predicted, std::span<const int32_t> gold);

// F1 of the positive class 1: 2 TP / (2 TP + FP + FN); 0 when there is no true positive.
double f1_binary(std::span<const int32_t> predicted, std::span<const int32_t> gold);

// Matthews correlation coefficient, multiclass form (Gorodkin 2004; equals the binary
// (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) for two classes):
//   c = #correct, s = n, p_k = #predicted k, t_k = #gold k,
//   MCC = (c s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2) (s^2 - sum_k t_k^2)),
// 0 when the denominator is 0 (one side constant), as scikit-learn.
double matthews_corrcoef(std::span<const int32_t> predicted, std::span<const int32_t> gold);

// Pearson r = sum (x - mx)(y - my) / sqrt(sum (x - mx)^2 sum (y - my)^2), in double; NaN when x or
// y is constant (undefined, as scipy).
double pearson(std::span<const double> x, std::span<const double> y);

// Ranks 1..n of x, tied values sharing the average of their ranks ({5, 1, 5} -> {2.5, 1, 2.5}).
std::vector<double> average_ranks(std::span<const double> x);

// Spearman rho = Pearson r of the average ranks.
double spearman(std::span<const double> x, std::span<const double> y);

}  // namespace electra
