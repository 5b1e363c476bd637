// The training metrics (kernels/train_metrics.h) on hand-made micro-batches: every accumulator
// row against the header's formulas worked out by hand (values chosen so that each sum and ratio
// is exact, or the same single rounding the formula makes), added onto an accumulator that already
// holds values, into rows of the test's own layout (rows not given keep their values); r(a, 0) = 0
// for empty micro-batches; non-finite losses counted; and the argument checks. (The gradient norm's
// record is grad_norm's: weight_update_test.cpp.)
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/train_metrics.h"
#include "test/common/test_util.h"
#include "test/kernels/train_metrics_rows.h"

using namespace electra;
using namespace electra::test;

namespace {

// An accumulator part-way through an update: entry i holds (i + 1) / 4, so additions show.
std::vector<double> started_acc() {
  std::vector<double> acc(kRows);
  for (int i = 0; i < kRows; ++i) acc[i] = (i + 1) / 4.0;
  return acc;
}

// acc == expected entry by entry, NaN matching NaN; the failure names the row.
void check_acc(const std::vector<double>& acc, const std::vector<double>& expected) {
  REQUIRE(acc.size() == expected.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    INFO("row " << i << ": " << acc[i] << " expected " << expected[i]);
    CHECK((acc[i] == expected[i] || (std::isnan(acc[i]) && std::isnan(expected[i]))));
  }
}

// counts[kDiscCounts] of kernels/disc_head.h.
template <class T>
std::vector<T> disc_counts(T correct, T true_positive, T predicted, T actual, T weight, T loss) {
  std::vector<T> c(kDiscCounts);
  c[kDiscCorrect] = correct;
  c[kDiscTruePositive] = true_positive;
  c[kDiscPredictedPositive] = predicted;
  c[kDiscActualPositive] = actual;
  c[kDiscWeight] = weight;
  c[kDiscLoss] = loss;
  return c;
}

// A loss op's rows with a binary classifier's counts (ELECTRA's generator and discriminator).
template <class T>
struct MeansAndCounts {
  std::vector<T> loss = {0.5, 1.25, 2, 0.75, 0};
  std::vector<int32_t> argmax = {3, 7, 2, 9, 4};
  std::vector<int32_t> labels = {3, 5, 2, 9, 4};  // rows 0, 2, 3 right; 4 right but unused
  std::vector<float> weights = {1, 1, 1, 1, 0};
  std::vector<T> counts = disc_counts<T>(6, 2, 4, 5, 8, 4);
  float factor = 50;

  void run(std::vector<double>& acc) {
    Context ctx = Context::cpu();
    run_op(ctx, AccumulateMeans{.loss = test::view(loss),
                                .argmax = test::view(argmax),
                                .labels = test::view(labels),
                                .weights = test::view(weights),
                                .counts = test::view(counts),
                                .means = kMeans,
                                .binary = kBinary,
                                .binary_factor = factor,
                                .total = kTotals,
                                .acc = Out(test::view(acc))});
  }
};

// A loss op's rows alone (a masked LM), recording the mean, the accuracy and the total only.
template <class T>
struct MeansOnly {
  std::vector<T> loss = {0.25, 3, 1.5, 0, 2.25, 1};
  std::vector<int32_t> argmax = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> labels = {1, 0, 3, 4, 0, 6};  // rows 0, 2, 5 right; 3 right but unused
  std::vector<float> weights = {1, 1, 1, 0, 1, 1};

  void run(std::vector<double>& acc) {
    Context ctx = Context::cpu();
    run_op(ctx,
           AccumulateMeans{.loss = test::view(loss),
                           .argmax = test::view(argmax),
                           .labels = test::view(labels),
                           .weights = test::view(weights),
                           .counts = Tensor{},
                           .means = {.mean = kMean, .accuracy = kAccuracy, .weight = kNoRow},
                           .binary = {},
                           .binary_factor = 0,
                           .total = {.total = kTotal, .count = kNoRow, .non_finite = kNonFinite},
                           .acc = Out(test::view(acc))});
  }
};

template <class T>
struct ValueMeans {
  std::vector<T> value = {2, -1, 0.5, 0};
  std::vector<T> loss = {0.5, 0.25, 1.5, 0};
  std::vector<float> weights = {1, 1, 1, 0};

  void run(std::vector<double>& acc) {
    Context ctx = Context::cpu();
    run_op(ctx, AccumulateValueMeans{.value = test::view(value),
                                     .loss = test::view(loss),
                                     .weights = test::view(weights),
                                     .rows = {.value = kValue, .loss = kValueLoss},
                                     .total = kTotals,
                                     .acc = Out(test::view(acc))});
  }
};

// With every weight 0 a micro-batch adds r(a, 0) = 0 to each ratio and sum it was given: acc
// stays `expected`.
template <class Batch>
void check_weightless_adds_nothing(Batch batch, std::vector<double>& acc,
                                   const std::vector<double>& expected) {
  batch.weights.assign(batch.weights.size(), 0.0f);
  batch.run(acc);
  check_acc(acc, expected);
}

template <class T>
void accumulate_loss(std::vector<T> loss, double weight, double count, std::vector<double>& acc) {
  Context ctx = Context::cpu();
  run_op(ctx, AccumulateLoss{.loss = test::view(loss),
                             .weight = weight,
                             .count = count,
                             .total = kTotals,
                             .acc = Out(test::view(acc))});
}

}  // namespace

TEMPLATE_TEST_CASE("accumulate_means adds a micro-batch's means, ratios and sums to its rows",
                   "[train_metrics]", float, double) {
  MeansAndCounts<TestType> batch;
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  // W = 4 used rows, L = 0.5 + 1.25 + 2 + 0.75 = 4.5, C = 3 (row 4 is right but has weight 0);
  // counts: correct 6, TP 2, predicted 4, actual 5, weight 8, loss 4.
  expected[kMean] += 4.5 / 4;
  expected[kAccuracy] += 3.0 / 4;
  expected[kBinaryLoss] += 4.0 / 8;
  expected[kBinaryAccuracy] += 6.0 / 8;
  expected[kPrecision] += 2.0 / 4;
  expected[kRecall] += 2.0 / 5;
  expected[kPositiveRate] += 5.0 / 8;
  expected[kTotal] += 4.5 / 4 + 50 * (4.0 / 8);
  expected[kWeight] += 4;
  expected[kBinaryWeight] += 8;
  expected[kCount] += 1;
  check_acc(acc, expected);
  // A second micro-batch adds again: the update's sums.
  batch.loss = {1, 0, 0, 0, 0};
  batch.weights = {1, 0, 0, 0, 0};
  batch.counts = disc_counts<TestType>(1, 0, 0, 1, 2, 3);
  batch.factor = 1;
  batch.run(acc);
  expected[kMean] += 1;
  expected[kAccuracy] += 1;
  expected[kBinaryLoss] += 1.5;
  expected[kBinaryAccuracy] += 0.5;
  expected[kPrecision] += 0;  // r(TP, 0): nothing predicted positive
  expected[kRecall] += 0;
  expected[kPositiveRate] += 0.5;
  expected[kTotal] += 1 + 1.5;
  expected[kWeight] += 1;
  expected[kBinaryWeight] += 2;
  expected[kCount] += 1;
  check_acc(acc, expected);
}

TEMPLATE_TEST_CASE("accumulate_means: a micro-batch without weight adds zero ratios",
                   "[train_metrics]", float, double) {
  MeansAndCounts<TestType> batch;
  batch.weights.assign(batch.weights.size(), 0.0f);  // W = 0 with L = 4.5 > 0
  batch.counts = disc_counts<TestType>(0, 0, 0, 0, 0, 0);
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  expected[kCount] += 1;  // every ratio is r(a, 0) = 0, every sum 0
  check_acc(acc, expected);
}

TEMPLATE_TEST_CASE("accumulate_means counts a micro-batch whose total loss is not finite",
                   "[train_metrics]", float, double) {
  MeansAndCounts<TestType> batch;
  std::vector<double> acc = started_acc();
  const double non_finite = acc[kNonFinite];
  batch.run(acc);
  CHECK(acc[kNonFinite] == non_finite);
  batch.loss[1] = INFINITY;
  batch.run(acc);
  CHECK(acc[kNonFinite] == non_finite + 1);
  CHECK(std::isinf(acc[kMean]));
  batch.loss[1] = 1.25;
  batch.counts[kDiscLoss] = NAN;  // the binary loss alone
  batch.run(acc);
  CHECK(acc[kNonFinite] == non_finite + 2);
  CHECK(std::isnan(acc[kBinaryLoss]));
  CHECK(acc[kCount] == started_acc()[kCount] + 3);
}

TEMPLATE_TEST_CASE("accumulate_means without counts adds the rows' mean and accuracy alone",
                   "[train_metrics]", float, double) {
  MeansOnly<TestType> batch;
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  // W = 5, L = 0.25 + 3 + 1.5 + 2.25 + 1 = 8, C = 3 (row 3 is right but has weight 0); the
  // rows it was not given (weight, count, the binary ones) keep their values.
  expected[kMean] += 8.0 / 5;
  expected[kAccuracy] += 3.0 / 5;
  expected[kTotal] += 8.0 / 5;
  check_acc(acc, expected);

  check_weightless_adds_nothing(batch, acc, expected);

  batch.weights.assign(batch.weights.size(), 1.0f);
  batch.loss[2] = NAN;
  batch.run(acc);
  expected[kMean] = NAN;
  expected[kAccuracy] += 4.0 / 6;  // rows 0, 2, 3, 5 of 6
  expected[kTotal] = NAN;
  expected[kNonFinite] += 1;
  check_acc(acc, expected);
}

TEMPLATE_TEST_CASE("accumulate_value_means adds the mean value and the mean loss",
                   "[train_metrics]", float, double) {
  ValueMeans<TestType> batch;
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  // W = 3, sum value = 2 - 1 + 0.5 = 1.5, sum loss = 0.5 + 0.25 + 1.5 = 2.25.
  expected[kValue] += 1.5 / 3;
  expected[kValueLoss] += 2.25 / 3;
  expected[kTotal] += 2.25 / 3;
  check_acc(acc, expected);

  check_weightless_adds_nothing(batch, acc, expected);

  // A non-finite value counts once, with a finite loss; both non-finite count once too.
  batch.value[0] = INFINITY;
  batch.run(acc);
  CHECK(acc[kNonFinite] == expected[kNonFinite] + 1);
  CHECK(acc[kValueLoss] == expected[kValueLoss] + 2.25 / 3);
  batch.loss[1] = NAN;
  batch.run(acc);
  CHECK(acc[kNonFinite] == expected[kNonFinite] + 2);
  CHECK(std::isnan(acc[kTotal]));
}

TEMPLATE_TEST_CASE("accumulate_loss adds weight x sum / count to the total", "[train_metrics]",
                   float, double) {
  std::vector<double> acc = started_acc(), expected = acc;
  // S = 4, count 2: 0.5 x 2 = 1; then a second term 3 x 1.5 / 4.
  accumulate_loss<TestType>({0.5, 1.5, 2}, 0.5, 2, acc);
  expected[kTotal] += 1;
  check_acc(acc, expected);
  accumulate_loss<TestType>({1, 0.5}, 3, 4, acc);
  expected[kTotal] += 3 * (1.5 / 4);
  check_acc(acc, expected);
  accumulate_loss<TestType>({1, 0.5}, 3, 0, acc);  // r(S, 0) = 0
  check_acc(acc, expected);
  accumulate_loss<TestType>({1, INFINITY}, 3, 4, acc);
  expected[kTotal] = INFINITY;
  expected[kNonFinite] += 1;
  check_acc(acc, expected);
}

// Runs `valid` with one argument broken by `change` and checks that the error names `what`.
template <class Op, class Change>
void expect_refused(Context& ctx, const Op& valid, Change change, const char* what) {
  Op op = valid;
  change(op);
  INFO(what);
  CHECK_THROWS_WITH(run_op(ctx, op), Catch::Contains(what));
}

// A wrong shape or dtype of one tensor: train_metrics_contract_test; a tensor on another device:
// dispatch_test. Left here: rows outside the accumulator (which the contract takes in any
// length) and the dtype rules of the losses, which the cases take in f32 or f64 alike: an f64
// loss beside f32 counts, integer losses (changed together with the tensors that must match them).
TEST_CASE("train_metrics ops refuse rows outside the accumulator and integer or mixed losses",
          "[train_metrics]") {
  Context ctx = Context::cpu();
  std::vector<float> f5(5, 1.0f), f6(6, 1.0f);
  std::vector<double> d5(5, 1.0), acc(kRows), acc_short(kCount);
  std::vector<int32_t> i5(5, 0), i6(6, 0);

  const AccumulateMeans means{.loss = test::view(f5),
                              .argmax = test::view(i5),
                              .labels = test::view(i5),
                              .weights = test::view(f5),
                              .counts = test::view(f6),  // [kDiscCounts] f32
                              .means = kMeans,
                              .binary = kBinary,
                              .binary_factor = 1,
                              .total = kTotals,
                              .acc = Out(test::view(acc))};
  run_op(ctx, means);  // the valid call each case below breaks one argument of
  // An f64 loss with f32 counts.
  expect_refused(
      ctx, means, [&](auto& op) { op.loss = test::view(d5); }, "differ in dtype");
  // A row the accumulator does not hold (the first one named).
  expect_refused(
      ctx, means, [&](auto& op) { op.acc = Out(test::view(acc_short)); },
      "accumulate_means acc: row 10 outside");
  expect_refused(
      ctx, means, [&](auto& op) { op.binary.recall = kRows; },
      str_cat("accumulate_means acc: row ", int{kRows}, " outside").c_str());
  // The CPU reference takes f32 or f64 losses.
  expect_refused(
      ctx, means,
      [&](auto& op) {
        op.loss = test::view(i5);
        op.counts = test::view(i6);
      },
      "accumulate_means loss");

  const AccumulateValueMeans values{.value = test::view(f5),
                                    .loss = test::view(f5),
                                    .weights = test::view(f5),
                                    .rows = {.value = kValue, .loss = kValueLoss},
                                    .total = kTotals,
                                    .acc = Out(test::view(acc))};
  run_op(ctx, values);
  expect_refused(
      ctx, values, [&](auto& op) { op.value = op.loss = test::view(i5); },
      "accumulate_value_means");

  const AccumulateLoss loss{.loss = test::view(f5),
                            .weight = 1,
                            .count = 5,
                            .total = kTotals,
                            .acc = Out(test::view(acc))};
  run_op(ctx, loss);
  expect_refused(
      ctx, loss, [&](auto& op) { op.loss = test::view(i5); }, "accumulate_loss loss");
}
