// The training metrics (kernels/train_metrics.h) on hand-made micro-batches: every accumulator
// entry against the header's formulas worked out by hand (values chosen so that each sum and ratio
// is exact, or the same single rounding the formula makes), added onto an accumulator that already
// holds values; r(a, 0) = 0 for empty micro-batches; non-finite losses and norms counted; and the
// argument checks.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/train_metrics.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// An accumulator part-way through an update: entry i holds (i + 1) / 4, so additions show.
std::vector<double> started_acc() {
  std::vector<double> acc(kTrainMetrics);
  for (int i = 0; i < kTrainMetrics; ++i) acc[i] = (i + 1) / 4.0;
  return acc;
}

// acc == expected entry by entry, NaN matching NaN; the failure names the metric.
void check_acc(const std::vector<double>& acc, const std::vector<double>& expected) {
  REQUIRE(acc.size() == expected.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    INFO("metric " << i << ": " << acc[i] << " expected " << expected[i]);
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

template <class T>
struct PretrainBatch {
  std::vector<T> gen_loss = {0.5, 1.25, 2, 0.75, 0};
  std::vector<int32_t> argmax = {3, 7, 2, 9, 4};
  std::vector<int32_t> original = {3, 5, 2, 9, 4};  // slots 0, 2, 3 right; 4 right but unused
  std::vector<float> weights = {1, 1, 1, 1, 0};
  std::vector<T> counts = disc_counts<T>(6, 2, 4, 5, 8, 4);
  float disc_weight = 50;

  void run(std::vector<double>& acc) {
    Context ctx = Context::cpu();
    run_op(ctx, AccumulatePretrainMetrics{.gen_loss = test::view(gen_loss),
                                          .argmax = test::view(argmax),
                                          .original = test::view(original),
                                          .weights = test::view(weights),
                                          .counts = test::view(counts),
                                          .disc_weight = disc_weight,
                                          .acc = Out(test::view(acc))});
  }
};

template <class T>
struct MlmBatch {
  std::vector<T> loss = {0.25, 3, 1.5, 0, 2.25, 1};
  std::vector<int32_t> argmax = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> labels = {1, 0, 3, 4, 0, 6};  // rows 0, 2, 5 right; 3 right but unused
  std::vector<float> weights = {1, 1, 1, 0, 1, 1};

  void run(std::vector<double>& acc) {
    Context ctx = Context::cpu();
    run_op(ctx, AccumulateMlmMetrics{.loss = test::view(loss),
                                     .argmax = test::view(argmax),
                                     .labels = test::view(labels),
                                     .weights = test::view(weights),
                                     .acc = Out(test::view(acc))});
  }
};

template <class T>
struct ReinforceBatch {
  std::vector<T> reward = {2, -1, 0.5, 0};
  std::vector<T> baseline_loss = {0.5, 0.25, 1.5, 0};
  std::vector<float> weights = {1, 1, 1, 0};

  void run(std::vector<double>& acc) {
    Context ctx = Context::cpu();
    run_op(ctx, AccumulateReinforceMetrics{.reward = test::view(reward),
                                           .baseline_loss = test::view(baseline_loss),
                                           .weights = test::view(weights),
                                           .acc = Out(test::view(acc))});
  }
};

void record_norm(float norm, std::vector<double>& acc) {
  Context ctx = Context::cpu();
  std::vector<float> n{norm};
  run_op(ctx, RecordGradNorm{.norm = test::view(n), .acc = Out(test::view(acc))});
}

template <class T>
void accumulate_loss(std::vector<T> loss, double weight, double count, std::vector<double>& acc) {
  Context ctx = Context::cpu();
  run_op(
      ctx,
      AccumulateLoss{
          .loss = test::view(loss), .weight = weight, .count = count, .acc = Out(test::view(acc))});
}

}  // namespace

TEMPLATE_TEST_CASE("accumulate_pretrain_metrics adds the micro-batch's means and sums to acc",
                   "[train_metrics]", float, double) {
  PretrainBatch<TestType> batch;
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  // W = 4 used slots, L = 0.5 + 1.25 + 2 + 0.75 = 4.5, C = 3 (slot 4 is right but has weight 0);
  // counts: correct 6, TP 2, predicted 4, actual 5, weight 8, loss 4.
  expected[kMetricGenLoss] += 4.5 / 4;
  expected[kMetricGenAccuracy] += 3.0 / 4;
  expected[kMetricDiscLoss] += 4.0 / 8;
  expected[kMetricDiscAccuracy] += 6.0 / 8;
  expected[kMetricDiscPrecision] += 2.0 / 4;
  expected[kMetricDiscRecall] += 2.0 / 5;
  expected[kMetricReplaced] += 5.0 / 8;
  expected[kMetricTotalLoss] += 4.5 / 4 + 50 * (4.0 / 8);
  expected[kMetricMasked] += 4;
  expected[kMetricTokens] += 8;
  expected[kMetricMicroBatches] += 1;
  check_acc(acc, expected);
  // A second micro-batch adds again: the update's sums.
  batch.gen_loss = {1, 0, 0, 0, 0};
  batch.weights = {1, 0, 0, 0, 0};
  batch.counts = disc_counts<TestType>(1, 0, 0, 1, 2, 3);
  batch.disc_weight = 1;
  batch.run(acc);
  expected[kMetricGenLoss] += 1;
  expected[kMetricGenAccuracy] += 1;
  expected[kMetricDiscLoss] += 1.5;
  expected[kMetricDiscAccuracy] += 0.5;
  expected[kMetricDiscPrecision] += 0;  // r(TP, 0): nothing predicted replaced
  expected[kMetricDiscRecall] += 0;
  expected[kMetricReplaced] += 0.5;
  expected[kMetricTotalLoss] += 1 + 1.5;
  expected[kMetricMasked] += 1;
  expected[kMetricTokens] += 2;
  expected[kMetricMicroBatches] += 1;
  check_acc(acc, expected);
}

TEMPLATE_TEST_CASE("accumulate_pretrain_metrics: a micro-batch without weight adds zero ratios",
                   "[train_metrics]", float, double) {
  PretrainBatch<TestType> batch;
  batch.weights.assign(batch.weights.size(), 0.0f);  // W = 0 with L = 4.5 > 0
  batch.counts = disc_counts<TestType>(0, 0, 0, 0, 0, 0);
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  expected[kMetricMicroBatches] += 1;  // every ratio is r(a, 0) = 0, every sum 0
  check_acc(acc, expected);
}

TEMPLATE_TEST_CASE(
    "accumulate_pretrain_metrics counts a micro-batch whose total loss is not "
    "finite",
    "[train_metrics]", float, double) {
  PretrainBatch<TestType> batch;
  std::vector<double> acc = started_acc();
  const double non_finite = acc[kMetricNonFinite];
  batch.run(acc);
  CHECK(acc[kMetricNonFinite] == non_finite);
  batch.gen_loss[1] = INFINITY;
  batch.run(acc);
  CHECK(acc[kMetricNonFinite] == non_finite + 1);
  CHECK(std::isinf(acc[kMetricGenLoss]));
  batch.gen_loss[1] = 1.25;
  batch.counts[kDiscLoss] = NAN;  // the discriminator's loss alone
  batch.run(acc);
  CHECK(acc[kMetricNonFinite] == non_finite + 2);
  CHECK(std::isnan(acc[kMetricDiscLoss]));
  CHECK(acc[kMetricMicroBatches] == started_acc()[kMetricMicroBatches] + 3);
}

TEMPLATE_TEST_CASE("accumulate_mlm_metrics adds the masked LM's mean loss and accuracy",
                   "[train_metrics]", float, double) {
  MlmBatch<TestType> batch;
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  // W = 5, L = 0.25 + 3 + 1.5 + 2.25 + 1 = 8, C = 3 (row 3 is right but has weight 0).
  expected[kMetricMlmLoss] += 8.0 / 5;
  expected[kMetricMlmAccuracy] += 3.0 / 5;
  expected[kMetricTotalLoss] += 8.0 / 5;
  check_acc(acc, expected);

  batch.weights.assign(batch.weights.size(), 0.0f);  // r(a, 0) = 0
  batch.run(acc);
  check_acc(acc, expected);

  batch.weights.assign(batch.weights.size(), 1.0f);
  batch.loss[2] = NAN;
  batch.run(acc);
  expected[kMetricMlmLoss] = NAN;
  expected[kMetricMlmAccuracy] += 4.0 / 6;  // rows 0, 2, 3, 5 of 6
  expected[kMetricTotalLoss] = NAN;
  expected[kMetricNonFinite] += 1;
  check_acc(acc, expected);
}

TEMPLATE_TEST_CASE("accumulate_reinforce_metrics adds the mean reward and baseline loss",
                   "[train_metrics]", float, double) {
  ReinforceBatch<TestType> batch;
  std::vector<double> acc = started_acc(), expected = acc;
  batch.run(acc);
  // W = 3, sum reward = 2 - 1 + 0.5 = 1.5, sum baseline_loss = 0.5 + 0.25 + 1.5 = 2.25.
  expected[kMetricReward] += 1.5 / 3;
  expected[kMetricBaselineLoss] += 2.25 / 3;
  expected[kMetricTotalLoss] += 2.25 / 3;
  check_acc(acc, expected);

  batch.weights.assign(batch.weights.size(), 0.0f);  // r(a, 0) = 0
  batch.run(acc);
  check_acc(acc, expected);

  // A non-finite reward counts once, with a finite baseline loss; both non-finite count once too.
  batch.weights = {1, 1, 1, 0};
  batch.reward[0] = INFINITY;
  batch.run(acc);
  CHECK(acc[kMetricNonFinite] == expected[kMetricNonFinite] + 1);
  CHECK(acc[kMetricBaselineLoss] == expected[kMetricBaselineLoss] + 2.25 / 3);
  batch.baseline_loss[1] = NAN;
  batch.run(acc);
  CHECK(acc[kMetricNonFinite] == expected[kMetricNonFinite] + 2);
  CHECK(std::isnan(acc[kMetricTotalLoss]));
}

TEST_CASE("record_grad_norm stores the update's norm and counts a non-finite one",
          "[train_metrics]") {
  std::vector<double> acc = started_acc(), expected = acc;
  record_norm(2.5f, acc);
  expected[kMetricGradNorm] = 2.5;  // stored, not added
  check_acc(acc, expected);
  record_norm(0.75f, acc);
  expected[kMetricGradNorm] = 0.75;
  check_acc(acc, expected);
  record_norm(INFINITY, acc);
  expected[kMetricGradNorm] = INFINITY;
  expected[kMetricNonFinite] += 1;
  check_acc(acc, expected);
  record_norm(NAN, acc);
  expected[kMetricGradNorm] = NAN;
  expected[kMetricNonFinite] += 1;
  check_acc(acc, expected);
}

TEMPLATE_TEST_CASE("accumulate_loss adds weight x sum / count to the total loss", "[train_metrics]",
                   float, double) {
  std::vector<double> acc = started_acc(), expected = acc;
  // S = 4, count 2: 0.5 x 2 = 1; then a second term 3 x 1.5 / 4.
  accumulate_loss<TestType>({0.5, 1.5, 2}, 0.5, 2, acc);
  expected[kMetricTotalLoss] += 1;
  check_acc(acc, expected);
  accumulate_loss<TestType>({1, 0.5}, 3, 4, acc);
  expected[kMetricTotalLoss] += 3 * (1.5 / 4);
  check_acc(acc, expected);
  accumulate_loss<TestType>({1, 0.5}, 3, 0, acc);  // r(S, 0) = 0
  check_acc(acc, expected);
  accumulate_loss<TestType>({1, INFINITY}, 3, 4, acc);
  expected[kMetricTotalLoss] = INFINITY;
  expected[kMetricNonFinite] += 1;
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

TEST_CASE("train_metrics ops refuse wrong dtypes, shapes and devices naming the argument",
          "[train_metrics]") {
  Context ctx = Context::cpu();
  std::vector<float> f5(5, 1.0f), f6(6, 1.0f), f1{1.0f}, f2{1.0f, 2.0f};
  std::vector<double> d5(5, 1.0), d1{1.0}, acc(kTrainMetrics), acc_short(kTrainMetrics - 1);
  std::vector<float> acc_f32(kTrainMetrics);
  std::vector<int32_t> i4(4, 0), i5(5, 0), i6(6, 0);
  const Tensor counts = test::view(f6);  // [kDiscCounts] f32
  const Tensor on_gpu = Tensor::view_of(f5.data(), Device::CUDA, {5});

  const AccumulatePretrainMetrics pretrain{.gen_loss = test::view(f5),
                                           .argmax = test::view(i5),
                                           .original = test::view(i5),
                                           .weights = test::view(f5),
                                           .counts = counts,
                                           .disc_weight = 1,
                                           .acc = Out(test::view(acc))};
  run_op(ctx, pretrain);  // the valid call each case below breaks one argument of
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.argmax = test::view(f5); },
      "accumulate_pretrain_metrics argmax");
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.original = test::view(f5); },
      "accumulate_pretrain_metrics original");
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.weights = test::view(d5); },
      "accumulate_pretrain_metrics weights");
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.original = test::view(i4); }, "one element per slot");
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.counts = test::view(f5); },
      "accumulate_pretrain_metrics counts");
  // An f64 loss with f32 counts.
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.gen_loss = test::view(d5); }, "differ in dtype");
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.acc = Out(test::view(acc_short)); },
      "accumulate_pretrain_metrics acc");
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.acc = Out(test::view(acc_f32)); },
      "accumulate_pretrain_metrics acc");
  expect_refused(
      ctx, pretrain, [&](auto& op) { op.weights = on_gpu; }, "is not on");
  // The CPU reference takes f32 or f64 losses.
  expect_refused(
      ctx, pretrain,
      [&](auto& op) {
        op.gen_loss = test::view(i5);
        op.counts = test::view(i6);
      },
      "accumulate_pretrain_metrics gen_loss");

  const AccumulateMlmMetrics mlm{.loss = test::view(f5),
                                 .argmax = test::view(i5),
                                 .labels = test::view(i5),
                                 .weights = test::view(f5),
                                 .acc = Out(test::view(acc))};
  run_op(ctx, mlm);
  expect_refused(
      ctx, mlm, [&](auto& op) { op.labels = test::view(f5); }, "accumulate_mlm_metrics labels");
  expect_refused(
      ctx, mlm, [&](auto& op) { op.weights = test::view(f6); }, "one element per row");
  expect_refused(
      ctx, mlm, [&](auto& op) { op.loss = test::view(i5); }, "accumulate_mlm_metrics loss");
  expect_refused(
      ctx, mlm, [&](auto& op) { op.acc = Out(test::view(acc_short)); },
      "accumulate_mlm_metrics acc");

  const AccumulateReinforceMetrics reinforce{.reward = test::view(f5),
                                             .baseline_loss = test::view(f5),
                                             .weights = test::view(f5),
                                             .acc = Out(test::view(acc))};
  run_op(ctx, reinforce);
  expect_refused(
      ctx, reinforce, [&](auto& op) { op.baseline_loss = test::view(d5); }, "one element per slot");
  expect_refused(
      ctx, reinforce, [&](auto& op) { op.weights = test::view(f6); }, "one element per slot");
  expect_refused(
      ctx, reinforce, [&](auto& op) { op.weights = test::view(d5); },
      "accumulate_reinforce_metrics weights");
  expect_refused(
      ctx, reinforce, [&](auto& op) { op.reward = op.baseline_loss = test::view(i5); },
      "accumulate_reinforce_metrics");
  expect_refused(
      ctx, reinforce, [&](auto& op) { op.acc = Out(test::view(acc_f32)); },
      "accumulate_reinforce_metrics acc");

  const RecordGradNorm norm{.norm = test::view(f1), .acc = Out(test::view(acc))};
  run_op(ctx, norm);
  expect_refused(
      ctx, norm, [&](auto& op) { op.norm = test::view(f2); }, "record_grad_norm norm");
  expect_refused(
      ctx, norm, [&](auto& op) { op.norm = test::view(d1); }, "record_grad_norm norm");
  expect_refused(
      ctx, norm, [&](auto& op) { op.acc = Out(test::view(acc_short)); }, "record_grad_norm acc");

  const AccumulateLoss loss{
      .loss = test::view(f5), .weight = 1, .count = 5, .acc = Out(test::view(acc))};
  run_op(ctx, loss);
  expect_refused(
      ctx, loss, [&](auto& op) { op.loss = test::view(i5); }, "accumulate_loss loss");
  expect_refused(
      ctx, loss, [&](auto& op) { op.acc = Out(test::view(acc_f32)); }, "accumulate_loss acc");
  expect_refused(
      ctx, loss, [&](auto& op) { op.loss = on_gpu; }, "is not on");
}
