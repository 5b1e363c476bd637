#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/masking.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Masked {
  std::vector<int32_t> ids, positions, original;
  std::vector<float> weights;
};

Masked run(std::vector<int32_t>& ids, int64_t b, int64_t t, int64_t n,
           const MaskingParams& params) {
  Context ctx = Context::cpu();
  Masked out{std::vector<int32_t>(b * t), std::vector<int32_t>(b * n), std::vector<int32_t>(b * n),
             std::vector<float>(b * n)};
  run_op(ctx,
         MaskTokens{.ids = Tensor::view_of(ids.data(), Device::CPU, {b, t}),
                    .params = params,
                    .masked_ids = Out(Tensor::view_of(out.ids.data(), Device::CPU, {b, t})),
                    .positions = Out(Tensor::view_of(out.positions.data(), Device::CPU, {b, n})),
                    .original = Out(Tensor::view_of(out.original.data(), Device::CPU, {b, n})),
                    .weights = Out(Tensor::view_of(out.weights.data(), Device::CPU, {b, n}))});
  return out;
}

// [CLS] a.. [SEP] b.. [SEP] then padding, with `len` non-pad tokens (len >= 3).
std::vector<int32_t> sequence(int64_t t, int64_t len, uint64_t seed, const MaskingParams& p) {
  std::vector<int32_t> ids = test::random_ints(t, seed, 1000, 30000);
  const int64_t sep = 1 + (len - 2) / 2;
  ids[0] = p.cls_id;
  ids[sep] = p.sep_id;
  ids[len - 1] = p.sep_id;
  for (int64_t i = len; i < t; ++i) ids[i] = p.pad_id;
  return ids;
}

}  // namespace

TEST_CASE("masking slot counts follow the official formulas", "[masking]") {
  CHECK(max_predictions(0.15f, 128) == 19);
  CHECK(max_predictions(0.15f, 512) == 79);
  CHECK(max_predictions(0.25f, 128) == 32);
  CHECK(masking_target_count(0.5f, 5) == 2);  // 2.5 rounds to even
  CHECK(masking_target_count(0.5f, 7) == 4);  // 3.5 rounds to even
  CHECK(masking_target_count(0.15f, 100) == 15);
  CHECK(masking_target_count(0.15f, 7) == 1);  // 1.05
  CHECK(masking_target_count(0.15f, 2) == 0);
}

// Over many sequences and steps: k is exact, only candidates are chosen, once each, in ascending
// order; empty slots are zero; masked_ids differ from ids only at chosen positions, by [MASK], in
// a proportion within binomial bounds of mask_token_prob.
TEST_CASE("masking invariants and the [MASK]/keep split", "[masking]") {
  const int64_t b = 64, t = 128;
  MaskingParams params;
  const int64_t n = max_predictions(params.mask_prob.value, static_cast<int>(t));
  int64_t chosen = 0, masked = 0;
  for (uint32_t step = 0; step < 20; ++step) {
    std::vector<int32_t> ids(b * t);
    std::vector<int64_t> lengths(b);
    const std::vector<int32_t> len_draws = test::random_ints(b, 1000 + step, 3, t);
    for (int64_t s = 0; s < b; ++s) {
      lengths[s] = len_draws[s];
      const std::vector<int32_t> seq = sequence(t, lengths[s], step * b + s, params);
      std::copy(seq.begin(), seq.end(), ids.begin() + s * t);
    }
    params.stream = RngStream{7, RngPurpose::kMasking, step, 0};
    const Masked out = run(ids, b, t, n, params);
    for (int64_t s = 0; s < b; ++s) {
      const int64_t candidates = lengths[s] - 3;
      const int64_t k = std::min(
          {n, candidates, std::max<int64_t>(1, std::lround(std::nearbyint(0.15f * lengths[s])))});
      std::vector<bool> picked(t, false);
      for (int64_t slot = 0; slot < n; ++slot) {
        const int64_t i = s * n + slot;
        if (slot >= k) {
          REQUIRE(out.weights[i] == 0.0f);
          REQUIRE(out.positions[i] == 0);
          REQUIRE(out.original[i] == 0);
          continue;
        }
        REQUIRE(out.weights[i] == 1.0f);
        const int32_t pos = out.positions[i];
        REQUIRE(pos >= 0);
        REQUIRE(pos < t);
        if (slot > 0) REQUIRE(pos > out.positions[i - 1]);
        const int32_t id = ids[s * t + pos];
        REQUIRE(id != params.pad_id);
        REQUIRE(id != params.cls_id);
        REQUIRE(id != params.sep_id);
        REQUIRE(out.original[i] == id);
        picked[pos] = true;
      }
      for (int64_t pos = 0; pos < t; ++pos) {
        const int32_t before = ids[s * t + pos], after = out.ids[s * t + pos];
        if (!picked[pos]) {
          REQUIRE(after == before);
        } else {
          REQUIRE((after == before || after == params.mask_id));
          ++chosen;
          masked += after == params.mask_id;
        }
      }
    }
  }
  const double fraction = static_cast<double>(masked) / chosen;
  const double sigma = std::sqrt(0.85 * 0.15 / chosen);
  INFO("chosen " << chosen << " masked fraction " << fraction);
  CHECK(chosen > 5000);
  CHECK(std::abs(fraction - 0.85) < 5 * sigma);
}

// Every candidate of a sequence is chosen equally often: chi-square over 30 candidates.
TEST_CASE("masking chooses candidates uniformly", "[masking]") {
  const int64_t b = 64, t = 32;
  MaskingParams params;
  const int64_t n = max_predictions(params.mask_prob.value, static_cast<int>(t));
  REQUIRE(n == 4);  // round(0.15 * 32) = 5 is capped by N = 4
  // [CLS] at 0, [SEP] at 16, no padding: 30 candidates.
  std::vector<int32_t> one = test::random_ints(t, 5, 1000, 30000);
  one[0] = params.cls_id;
  one[16] = params.sep_id;
  std::vector<int32_t> ids(b * t);
  for (int64_t s = 0; s < b; ++s) std::copy(one.begin(), one.end(), ids.begin() + s * t);
  std::vector<int64_t> counts(t, 0);
  int64_t picks = 0;
  for (uint32_t step = 0; step < 50; ++step) {
    params.stream = RngStream{3, RngPurpose::kMasking, step, 0};
    const Masked out = run(ids, b, t, n, params);
    for (int64_t i = 0; i < b * n; ++i) {
      REQUIRE(out.weights[i] == 1.0f);
      ++counts[out.positions[i]];
      ++picks;
    }
  }
  CHECK(counts[0] == 0);
  CHECK(counts[16] == 0);
  const double expect = static_cast<double>(picks) / 30;
  double chi2 = 0;
  for (int64_t pos = 0; pos < t; ++pos) {
    if (pos == 0 || pos == 16) continue;
    chi2 += (counts[pos] - expect) * (counts[pos] - expect) / expect;
  }
  INFO("chi2 " << chi2);
  CHECK(chi2 < 66.0);  // chi-square with 29 degrees of freedom: P(> 66) < 1e-4
}

TEST_CASE("masking a sequence without candidates or without slots masks nothing", "[masking]") {
  MaskingParams params;
  params.stream = RngStream{1, RngPurpose::kMasking, 0, 0};
  // Sequence 0 has no candidates; sequence 1 has two (positions 1 and 2).
  std::vector<int32_t> ids = {params.cls_id, params.sep_id, params.pad_id, params.pad_id,
                              params.cls_id, 2000,          2001,          params.sep_id};
  const Masked out = run(ids, 2, 4, 2, params);
  CHECK(std::equal(ids.begin(), ids.begin() + 4, out.ids.begin()));
  CHECK(out.weights[0] == 0.0f);
  CHECK(out.weights[1] == 0.0f);
  CHECK(out.positions[0] == 0);
  CHECK(out.original[1] == 0);
  // k = max(1, round(0.15 * 4)) = 1 position of the two candidates.
  CHECK(out.weights[2] == 1.0f);
  CHECK(out.weights[3] == 0.0f);
  CHECK((out.positions[2] == 1 || out.positions[2] == 2));
  // Without slots nothing is masked.
  const Masked none = run(ids, 2, 4, 0, params);
  CHECK(none.ids == ids);
}

// BERT's corruption (the mlm objective): of the chosen positions 80% [MASK], 10% a uniform random
// token, 10% kept, each fraction within 5 binomial standard deviations over ~9,800 positions; the
// random tokens cover the vocabulary (mean within 5 standard errors of (V - 1) / 2).
TEST_CASE("BERT corruption: 80% [MASK], 10% random, 10% kept", "[masking]") {
  Context ctx = Context::cpu();
  const int64_t b = 128, t = 512, v = 30522;
  MaskingParams params;
  params.mask_token_prob = 0.8f;
  params.random_token_prob = 0.1f;
  params.vocab_size = v;
  params.stream = RngStream{7, RngPurpose::kMasking, 3, 0};
  const int64_t n = max_predictions(params.mask_prob.value, static_cast<int>(t));
  std::vector<int32_t> ids = test::random_ints(b * t, 21, 1000, 30000);
  for (int64_t s = 0; s < b; ++s) ids[s * t] = params.cls_id, ids[s * t + t - 1] = params.sep_id;
  std::vector<int32_t> masked(b * t), positions(b * n), original(b * n);
  std::vector<float> weights(b * n);
  run_op(ctx, MaskTokens{.ids = Tensor::view_of(ids.data(), Device::CPU, {b, t}),
                         .params = params,
                         .masked_ids = Out(Tensor::view_of(masked.data(), Device::CPU, {b, t})),
                         .positions = Out(Tensor::view_of(positions.data(), Device::CPU, {b, n})),
                         .original = Out(Tensor::view_of(original.data(), Device::CPU, {b, n})),
                         .weights = Out(Tensor::view_of(weights.data(), Device::CPU, {b, n}))});
  double chosen = 0, mask = 0, random = 0, kept = 0, random_sum = 0, changed_elsewhere = 0;
  std::vector<bool> is_chosen(b * t, false);
  for (int64_t i = 0; i < b * n; ++i) {
    if (weights[i] == 0) continue;
    const int64_t at = (i / n) * t + positions[i];
    is_chosen[at] = true;
    ++chosen;
    const int32_t out = masked[at];
    // A random draw equal to the original or to [MASK] (probability 2 / V) counts as kept/[MASK].
    if (out == params.mask_id) {
      ++mask;
    } else if (out == original[i]) {
      ++kept;
    } else {
      ++random;
      random_sum += out;
      CHECK((out >= 0 && out < v));
    }
  }
  for (int64_t i = 0; i < b * t; ++i) changed_elsewhere += !is_chosen[i] && masked[i] != ids[i];
  CHECK(changed_elsewhere == 0);
  REQUIRE(chosen > 9000);
  auto within = [&](double count, double p) {
    const double sd = std::sqrt(chosen * p * (1 - p));
    INFO(count << " of " << chosen << " expected " << p * chosen << " +- " << sd);
    CHECK(std::abs(count - p * chosen) <= 5 * sd);
  };
  within(mask, 0.8);
  within(random, 0.1);
  within(kept, 0.1);
  const double mean = random_sum / random, sd_mean = v / std::sqrt(12.0 * random);
  INFO("random token mean " << mean);
  CHECK(std::abs(mean - (v - 1) / 2.0) <= 5 * sd_mean);
}
