// train_metrics (kernels/train_metrics.h) for the op harness (test/common/op_case.h), GPU only (no
// gradient): each op over micro-batches of a realistic size (ELECTRA's B x N = 128 x 20 masked
// slots; B x T = 128 x 128 rows for an all-tokens masked LM), every 13th slot unused (weight 0), a
// third of the predictions right (some of them in unused slots), added onto an accumulator that
// already holds values; then every op at once with NaN and infinite losses, counted
// alike. The GPU runs twice for the same bits (one block, a fixed reduction tree). Hand values,
// r(a, 0) = 0, the non-finite counts and refusals: train_metrics_test.cpp.
//
// Tolerance 1e-11 relative on the f64 accumulator (below 1e-3 of its largest row, relative to that
// floor: test_util.h). Both sides widen the f32 inputs to f64 exactly and sum them in f64, in
// different orders (the CPU left to right, the GPU 256 strided partial sums and a tree). For
// non-negative summands (losses, rewards = token losses, 0/1 weights) each order is within
// (n - 1) 2^-53 of the exact sum relative: 3e-13 for n = 2560 slots, 2e-12 for 16384 rows. nvcc may
// also contract m + binary_factor * b into an FMA, one ulp. A sum or ratio rounded to f32 anywhere
// would be off by ~6e-8 (above the tolerance even against the floor: the largest row, a sum of
// weights, is < 6e4). The counts (masked slots, tokens, micro-batches, non-finite ones) are sums of
// integers: 1 off is 2e-5 relative or more.
#include <cmath>
#include <functional>

#include "kernels/train_metrics.h"
#include "test/common/op_case.h"
#include "test/kernels/train_metrics_rows.h"

namespace electra::test {
namespace {

constexpr int64_t kSlots = 128 * 20;
constexpr int64_t kTokens = 128 * 128;
constexpr int kMicroBatches = 3;
constexpr int32_t kVocab = 30522;

// `batches` loss ops' outputs over n rows each, flattened: w x loss, its argmax, the truth and the
// weights (every 13th row 0).
struct Rows {
  int64_t batches, n;
  std::vector<double> loss{}, weights{}, argmax{}, truth{};
};

Rows random_rows(int64_t batches, int64_t n, uint64_t seed) {
  const int64_t count = batches * n;
  Rows r{.batches = batches, .n = n};
  r.weights.assign(count, 1.0);
  r.loss = random_vector<double>(count, seed, 0.01, 8.0);
  const std::vector<int32_t> truth = random_ints(count, seed + 1, 0, kVocab - 1);
  const std::vector<int32_t> argmax = random_ints(count, seed + 2, 0, kVocab - 1);
  r.truth.assign(truth.begin(), truth.end());
  r.argmax.assign(argmax.begin(), argmax.end());
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = k % n;
    if (i % 13 == 0) r.weights[k] = 0.0;
    // The f32 the op reads, so that w x loss is exact.
    r.loss[k] = static_cast<float>(r.loss[k]) * r.weights[k];
    if (i % 3 == 0) r.argmax[k] = r.truth[k];
  }
  return r;
}

// disc_head's counts over B x T tokens: sums of 0/1 weights (integers) and a summed loss.
std::vector<double> random_counts(uint64_t seed) {
  const std::vector<float> u = random_vector<float>(4, seed, 0.0, 1.0);
  std::vector<float> c(kDiscCounts);
  c[kDiscWeight] = std::round(kTokens * (0.7f + 0.3f * u[0]));
  c[kDiscActualPositive] = std::round(c[kDiscWeight] * 0.15f * u[1]);
  c[kDiscTruePositive] = std::round(c[kDiscActualPositive] * u[2]);
  c[kDiscPredictedPositive] = c[kDiscTruePositive] + std::round(c[kDiscActualPositive] * u[3]);
  c[kDiscCorrect] = c[kDiscWeight] - (c[kDiscPredictedPositive] - c[kDiscTruePositive]) -
                    (c[kDiscActualPositive] - c[kDiscTruePositive]);
  c[kDiscLoss] = c[kDiscWeight] * (0.1f + 0.5f * u[0]);
  return {c.begin(), c.end()};
}

// Some tensors of a case and the ops that read them, adding to the accumulator.
struct Part {
  std::vector<TensorSpec> tensors{};
  std::function<void(Context& ctx, const Args& a, const Out& acc)> run{};
};

// The tensors of `rows` named <prefix>_loss, _argmax, _labels, _weights, [batches, n].
std::vector<TensorSpec> row_specs(const std::string& prefix, const Rows& r) {
  const std::vector<int64_t> dims = {r.batches, r.n};
  return {input(prefix + "_loss", dims, fixed(r.loss), Kind::kF32)
              .any_dtype("the CPU takes the losses of f32 and f64 runs alike"),
          input(prefix + "_argmax", dims, fixed(r.argmax), Kind::kI32),
          input(prefix + "_labels", dims, fixed(r.truth), Kind::kI32),
          input(prefix + "_weights", dims, fixed(r.weights), Kind::kF32)};
}

// accumulate_means of each micro-batch of `rows`, with its disc_head counts when `counts` is given
// (ELECTRA's generator and discriminator: the binary factor 50), else as a masked LM beside it.
Part means(const std::string& prefix, const Rows& rows, std::vector<double> counts = {}) {
  Part p{.tensors = row_specs(prefix, rows)};
  const bool binary = !counts.empty();
  if (binary) {
    p.tensors.push_back(input(prefix + "_counts", {rows.batches, kDiscCounts},
                              fixed(std::move(counts)), Kind::kF32));
  }
  p.run = [prefix, binary, batches = rows.batches](Context& ctx, const Args& a, const Out& acc) {
    for (int64_t j = 0; j < batches; ++j) {
      auto row = [&](const char* name) { return a[prefix + name].rows(j, j + 1); };
      run_op(
          ctx,
          AccumulateMeans{
              .loss = row("_loss"),
              .argmax = row("_argmax"),
              .labels = row("_labels"),
              .weights = row("_weights"),
              .counts = binary ? row("_counts").reshape({kDiscCounts}) : Tensor{},
              .means = binary ? kMeans : MeanRows{.mean = kSecondMean, .accuracy = kSecondAccuracy},
              .binary = binary ? kBinary : BinaryRows{},
              .binary_factor = binary ? 50.0f : 0.0f,
              .total = binary ? kTotals : TotalRows{.total = kTotal, .non_finite = kNonFinite},
              .acc = acc});
    }
  };
  return p;
}

// accumulate_value_means of each micro-batch: the values are ELECTRA's rewards (token losses of
// the used slots, as kernels/reinforce.h writes them), the losses a baseline's.
Part value_means(const std::string& prefix, const Rows& rows, std::vector<double> baseline_loss) {
  const std::vector<int64_t> dims = {rows.batches, rows.n};
  Part p{.tensors = {
             input(prefix + "_value", dims, fixed(rows.loss), Kind::kF32),
             input(prefix + "_baseline_loss", dims, fixed(std::move(baseline_loss)), Kind::kF32),
             input(prefix + "_weights", dims, fixed(rows.weights), Kind::kF32)}};
  p.run = [prefix, batches = rows.batches](Context& ctx, const Args& a, const Out& acc) {
    for (int64_t j = 0; j < batches; ++j) {
      auto row = [&](const char* name) { return a[prefix + name].rows(j, j + 1); };
      run_op(ctx, AccumulateValueMeans{.value = row("_value"),
                                       .loss = row("_baseline_loss"),
                                       .weights = row("_weights"),
                                       .rows = {.value = kValue, .loss = kValueLoss},
                                       .total = kTotals,
                                       .acc = acc});
    }
  };
  return p;
}

std::vector<double> baseline_losses(const Rows& rows, uint64_t seed) {
  std::vector<double> l = random_vector<double>(rows.loss.size(), seed, 0.05, 3.0);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(l[i]) * rows.weights[i];
  return l;
}

// accumulate_loss of one term: weight x sum(loss) / count.
Part loss_term(const std::string& name, std::vector<double> loss, double weight, double count) {
  const auto n = static_cast<int64_t>(loss.size());
  return {
      .tensors = {input(name, {n}, fixed(std::move(loss)), Kind::kF32)
                      .any_shape("accumulate_loss sums losses of any shape")
                      .any_dtype("the CPU sums f32 and f64 losses alike")},
      .run = [name, weight, count](Context& ctx, const Args& a, const Out& acc) {
        run_op(
            ctx,
            AccumulateLoss{
                .loss = a[name], .weight = weight, .count = count, .total = kTotals, .acc = acc});
      }};
}

OpCase metrics(const std::string& shape, std::vector<Part> parts) {
  // An accumulator part-way through an update.
  std::vector<TensorSpec> tensors = {updated("acc", {kRows}, {.lo = 0.5, .hi = 4.0}, Kind::kF64)
                                         .relative({1e-11, 1e-11})
                                         .nonfinite()
                                         .any_shape("at least the rows the ops write")};
  std::vector<std::function<void(Context&, const Args&, const Out&)>> runs;
  for (Part& p : parts) {
    for (TensorSpec& t : p.tensors) tensors.push_back(std::move(t));
    runs.push_back(std::move(p.run));
  }
  return OpCase{
      .op = "train_metrics",
      .shape = shape,
      .tensors = std::move(tensors),
      .forward =
          [runs](Context& ctx, const Args& a) {
            for (const auto& run : runs) run(ctx, a, Out(a["acc"]));
          },
      .modes = kGpu,
      .dtypes = {DType::F32},  // no activation: the dtypes are the ops'
  };
}

std::vector<double> counts_of_batches(uint64_t seed) {
  std::vector<double> all;
  for (int k = 0; k < kMicroBatches; ++k) {
    const std::vector<double> c = random_counts(seed + 10 * k);
    all.insert(all.end(), c.begin(), c.end());
  }
  return all;
}

std::vector<double> finetune_rows(uint64_t seed) {
  std::vector<double> l = random_vector<double>(128, seed, 0.01, 2.0);
  for (double& x : l) x = static_cast<float>(x);
  return l;
}

}  // namespace

std::vector<OpCase> op_cases() {
  const Rows counted = random_rows(kMicroBatches, kSlots, 1);
  const Rows mlm = random_rows(kMicroBatches, kTokens, 3);
  const Rows rewards = random_rows(kMicroBatches, kSlots, 4);
  // Per-token losses of a token-classification batch (a mean over the used tokens), then a
  // per-sequence loss of 128 rows with weight 0.5, then a term over no rows (r(S, 0) = 0).
  const Rows tokens = random_rows(1, kTokens, 41);
  double used = 0;
  for (double w : tokens.weights) used += w;
  const std::vector<double> sequences = finetune_rows(42);

  // Every op, with non-finite values: a slot's loss (micro-batch 1) and a discriminator loss
  // (micro-batch 2) with counts, the masked LM's last row, a reward and a fine-tuning
  // row.
  Rows bad_counted = random_rows(kMicroBatches, kSlots, 11);
  bad_counted.loss[kSlots + kSlots / 2] = INFINITY;
  std::vector<double> bad_counts = counts_of_batches(15);
  bad_counts[2 * kDiscCounts + kDiscLoss] = NAN;
  Rows bad_mlm = random_rows(1, kTokens, 51), bad_rewards = random_rows(1, kSlots, 52);
  bad_mlm.loss[kTokens - 1] = NAN;
  bad_rewards.loss[7] = INFINITY;
  std::vector<double> bad_finetune = finetune_rows(53);
  bad_finetune[64] = -INFINITY;

  return {
      metrics("means_with_counts_3x2560", {means("slots", counted, counts_of_batches(5))}),
      metrics("means_without_counts_3x16384", {means("tokens", mlm)}),
      metrics("value_means_3x2560", {value_means("slots", rewards, baseline_losses(rewards, 77))}),
      metrics("accumulate_loss_3_terms",
              {loss_term("tokens", tokens.loss, 1.0, used),
               loss_term("sequences", sequences, 0.5, 128), loss_term("none", sequences, 0.5, 0)}),
      metrics("non_finite_every_op",
              {means("slots", bad_counted, std::move(bad_counts)), means("tokens", bad_mlm),
               value_means("rewards", bad_rewards, baseline_losses(bad_rewards, 77)),
               loss_term("finetune", bad_finetune, 1.0, 128)}),
  };
}

}  // namespace electra::test
