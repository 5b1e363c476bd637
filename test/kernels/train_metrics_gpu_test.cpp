// train_metrics on the GPU against the CPU reference: each op over three micro-batches of a
// realistic size (ELECTRA's: B x N = 128 x 20 masked slots; B x T = 128 x 128 rows for an
// all-tokens masked LM), some slots unused (weight 0), a third of the predictions right (some of
// them in unused slots), added onto an accumulator that already holds values; the GPU twice for the
// same bits.
//
// Tolerance 1e-11 relative on the f64 accumulator. Both sides widen the f32 inputs to f64 exactly
// and sum them in f64, in different orders (the CPU left to right, the GPU 256 strided partial
// sums and a tree). For non-negative summands (losses, rewards = token losses, 0/1 weights) each
// order is within (n - 1) 2^-53 of the exact sum relative: 3e-13 for n = 2560 slots, 2e-12 for
// 16384 rows. (With these inputs the sums are even exact: every non-zero value is an f32 >= 0.01, a
// multiple of 2^-30, and the sums stay below 2^18, within f64's 53 bits.) nvcc may also contract
// m + binary_factor * b into an FMA, one ulp. A sum or ratio rounded to f32 anywhere would be
// off by ~6e-8. The counts (masked slots, tokens, micro-batches, non-finite) are sums of integers:
// equal.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/train_metrics.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"
#include "test/kernels/train_metrics_rows.h"

using namespace electra;
using namespace electra::test;

namespace {

constexpr int64_t kSlots = 128 * 20;
constexpr int64_t kTokens = 128 * 128;
constexpr int kMicroBatches = 3;
constexpr int32_t kVocab = 30522;

// One loss op's outputs over n rows: w x loss, its argmax, the truth and the weights.
struct Rows {
  std::vector<float> loss, weights;
  std::vector<int32_t> argmax, truth;
};

Rows random_rows(int64_t n, uint64_t seed) {
  Rows r;
  r.weights.assign(n, 1.0f);
  for (int64_t i = 0; i < n; i += 13) r.weights[i] = 0.0f;
  r.loss = test::random_vector<float>(n, seed, 0.01, 8.0);
  r.truth = test::random_ints(n, seed + 1, 0, kVocab - 1);
  r.argmax = test::random_ints(n, seed + 2, 0, kVocab - 1);
  for (int64_t i = 0; i < n; ++i) {
    r.loss[i] *= r.weights[i];
    if (i % 3 == 0) r.argmax[i] = r.truth[i];
  }
  return r;
}

// disc_head's counts over B x T tokens: sums of 0/1 weights (integers) and a summed loss.
std::vector<float> random_counts(uint64_t seed) {
  const std::vector<float> u = test::random_vector<float>(4, seed, 0.0, 1.0);
  std::vector<float> c(kDiscCounts);
  c[kDiscWeight] = std::round(kTokens * (0.7f + 0.3f * u[0]));
  c[kDiscActualPositive] = std::round(c[kDiscWeight] * 0.15f * u[1]);
  c[kDiscTruePositive] = std::round(c[kDiscActualPositive] * u[2]);
  c[kDiscPredictedPositive] = c[kDiscTruePositive] + std::round(c[kDiscActualPositive] * u[3]);
  c[kDiscCorrect] = c[kDiscWeight] - (c[kDiscPredictedPositive] - c[kDiscTruePositive]) -
                    (c[kDiscActualPositive] - c[kDiscTruePositive]);
  c[kDiscLoss] = c[kDiscWeight] * (0.1f + 0.5f * u[0]);
  return c;
}

template <class T>
Tensor put(Context& ctx, Arena& arena, const std::vector<T>& values) {
  return test::upload(ctx, arena, values, {static_cast<int64_t>(values.size())});
}

// An accumulator part-way through an update.
std::vector<double> started_acc() {
  return test::random_vector<double>(kRows, 99, 0.5, 4.0);
}

// Runs ops(ctx, arena, acc) on ctx's device from started_acc(); returns acc.
template <class Ops>
std::vector<double> accumulate_on(Context& ctx, const Ops& ops) {
  Arena arena("train_metrics", ctx.device(), 8 << 20);
  const Tensor acc = put(ctx, arena, started_acc());
  ops(ctx, arena, Out(acc));
  return test::download<double>(ctx, acc);
}

bool is_count(size_t row) {
  return row == kWeight || row == kBinaryWeight || row == kCount || row == kNonFinite;
}

// The GPU's accumulator equals the CPU's (tolerance: top of file), and a second GPU run gives the
// same bits (one block, a fixed reduction tree). Returns the GPU's accumulator.
template <class Ops>
std::vector<double> check_gpu_matches_cpu(const Ops& ops) {
  Context cpu = Context::cpu();
  Context gpu = Context::cuda(0);
  const std::vector<double> expected = accumulate_on(cpu, ops);
  const std::vector<double> got = accumulate_on(gpu, ops);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("row " << i << ": GPU " << got[i] << ", CPU " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else if (is_count(i) || std::isinf(expected[i])) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(got[i] == Approx(expected[i]).epsilon(1e-11));
    }
  }
  const std::vector<double> again = accumulate_on(gpu, ops);
  CHECK(std::memcmp(again.data(), got.data(), got.size() * sizeof(double)) == 0);
  return got;
}

struct CountedBatch {
  Rows slots;
  std::vector<float> counts;
};

std::vector<CountedBatch> counted_batches() {
  std::vector<CountedBatch> out;
  for (int k = 0; k < kMicroBatches; ++k) {
    out.push_back({random_rows(kSlots, 10 * k + 1), random_counts(10 * k + 5)});
  }
  return out;
}

void accumulate_counted(Context& ctx, Arena& arena, const CountedBatch& b, const Out& acc) {
  run_op(ctx, AccumulateMeans{.loss = put(ctx, arena, b.slots.loss),
                              .argmax = put(ctx, arena, b.slots.argmax),
                              .labels = put(ctx, arena, b.slots.truth),
                              .weights = put(ctx, arena, b.slots.weights),
                              .counts = put(ctx, arena, b.counts),
                              .means = kMeans,
                              .binary = kBinary,
                              .binary_factor = 50.0f,
                              .total = kTotals,
                              .acc = acc});
}

void accumulate_mlm(Context& ctx, Arena& arena, const Rows& r, const Out& acc) {
  run_op(ctx, AccumulateMeans{
                  .loss = put(ctx, arena, r.loss),
                  .argmax = put(ctx, arena, r.argmax),
                  .labels = put(ctx, arena, r.truth),
                  .weights = put(ctx, arena, r.weights),
                  .counts = Tensor{},
                  .means = {.mean = kSecondMean, .accuracy = kSecondAccuracy, .weight = kNoRow},
                  .binary = {},
                  .binary_factor = 0,
                  .total = {.total = kTotal, .count = kNoRow, .non_finite = kNonFinite},
                  .acc = acc});
}

// Values as ELECTRA's rewards: token losses (non-negative) of the used slots, as
// kernels/reinforce.h writes them.
void accumulate_values(Context& ctx, Arena& arena, const Rows& r, const Out& acc) {
  std::vector<float> reward = r.loss;
  std::vector<float> baseline_loss = test::random_vector<float>(r.loss.size(), 77, 0.05, 3.0);
  for (size_t i = 0; i < reward.size(); ++i) baseline_loss[i] *= r.weights[i];
  run_op(ctx, AccumulateValueMeans{.value = put(ctx, arena, reward),
                                   .loss = put(ctx, arena, baseline_loss),
                                   .weights = put(ctx, arena, r.weights),
                                   .rows = {.value = kValue, .loss = kValueLoss},
                                   .total = kTotals,
                                   .acc = acc});
}

void record_norm(Context& ctx, Arena& arena, float norm, const Out& acc) {
  run_op(ctx, RecordValue{.value = put(ctx, arena, std::vector<float>{norm}),
                          .row = kNorm,
                          .non_finite = kNonFinite,
                          .acc = acc});
}

void accumulate_loss(Context& ctx, Arena& arena, const std::vector<float>& loss, double weight,
                     double count, const Out& acc) {
  run_op(ctx, AccumulateLoss{.loss = put(ctx, arena, loss),
                             .weight = weight,
                             .count = count,
                             .total = kTotals,
                             .acc = acc});
}

}  // namespace

TEST_CASE("accumulate_means with counts on the GPU matches the CPU", "[train_metrics][gpu]") {
  const std::vector<CountedBatch> batches = counted_batches();
  check_gpu_matches_cpu([&](Context& ctx, Arena& arena, const Out& acc) {
    for (const CountedBatch& b : batches) accumulate_counted(ctx, arena, b, acc);
  });
}

TEST_CASE("accumulate_means without counts on the GPU matches the CPU", "[train_metrics][gpu]") {
  std::vector<Rows> batches;
  for (int k = 0; k < kMicroBatches; ++k) batches.push_back(random_rows(kTokens, 20 * k + 3));
  check_gpu_matches_cpu([&](Context& ctx, Arena& arena, const Out& acc) {
    for (const Rows& r : batches) accumulate_mlm(ctx, arena, r, acc);
  });
}

TEST_CASE("accumulate_value_means on the GPU matches the CPU", "[train_metrics][gpu]") {
  std::vector<Rows> batches;
  for (int k = 0; k < kMicroBatches; ++k) batches.push_back(random_rows(kSlots, 30 * k + 4));
  check_gpu_matches_cpu([&](Context& ctx, Arena& arena, const Out& acc) {
    for (const Rows& r : batches) accumulate_values(ctx, arena, r, acc);
  });
}

TEST_CASE("record_value on the GPU matches the CPU", "[train_metrics][gpu]") {
  check_gpu_matches_cpu([&](Context& ctx, Arena& arena, const Out& acc) {
    for (float norm : {3.7f, 0.25f, 1.5e4f}) record_norm(ctx, arena, norm, acc);
  });
}

TEST_CASE("accumulate_loss on the GPU matches the CPU", "[train_metrics][gpu]") {
  // Per-token losses of a token-classification batch (mean over the non-pad tokens), then a
  // per-sequence loss of 128 rows with weight 0.5, then a term over no rows (r(S, 0) = 0).
  const Rows tokens = random_rows(kTokens, 41);
  const std::vector<float> rows = test::random_vector<float>(128, 42, 0.01, 2.0);
  double used = 0;
  for (float w : tokens.weights) used += w;
  check_gpu_matches_cpu([&](Context& ctx, Arena& arena, const Out& acc) {
    accumulate_loss(ctx, arena, tokens.loss, 1.0, used, acc);
    accumulate_loss(ctx, arena, rows, 0.5, 128, acc);
    accumulate_loss(ctx, arena, rows, 0.5, 0, acc);
  });
}

TEST_CASE("train_metrics on the GPU count the same non-finite losses and norms as the CPU",
          "[train_metrics][gpu]") {
  std::vector<CountedBatch> batches = counted_batches();
  batches[1].slots.loss[kSlots / 2] = INFINITY;
  batches[2].counts[kDiscLoss] = NAN;
  Rows mlm = random_rows(kTokens, 51), reinforce = random_rows(kSlots, 52);
  mlm.loss[kTokens - 1] = NAN;
  reinforce.loss[7] = INFINITY;
  std::vector<float> finetune = test::random_vector<float>(128, 53, 0.01, 2.0);
  finetune[64] = -INFINITY;
  const std::vector<double> got =
      check_gpu_matches_cpu([&](Context& ctx, Arena& arena, const Out& acc) {
        for (const CountedBatch& b : batches) accumulate_counted(ctx, arena, b, acc);
        accumulate_mlm(ctx, arena, mlm, acc);
        accumulate_values(ctx, arena, reinforce, acc);
        record_norm(ctx, arena, NAN, acc);
        record_norm(ctx, arena, INFINITY, acc);
        accumulate_loss(ctx, arena, finetune, 1.0, 128, acc);
      });
  // Two micro-batches with counts, the one without, the value, two norms and the loss term.
  CHECK(got[kNonFinite] == started_acc()[kNonFinite] + 7);
}
