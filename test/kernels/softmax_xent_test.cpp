#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/softmax_sample_cpu.h"
#include "kernels/softmax_xent.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Outputs {
  std::vector<float> loss;
  std::vector<int32_t> sample, argmax;
};

// Runs the CPU op on `logits` [m, stride] in place.
Outputs run(std::vector<float>& logits, int64_t m, int64_t stride, std::vector<int32_t>& labels,
            std::vector<float>& weights, const SoftmaxXentParams& params) {
  Context ctx = Context::cpu();
  Outputs out{std::vector<float>(m), std::vector<int32_t>(m), std::vector<int32_t>(m)};
  run_op(ctx, SoftmaxXent{.logits = Out(Tensor::view_of(logits.data(), Device::CPU, {m, stride})),
                          .labels = Tensor::view_of(labels.data(), Device::CPU, {m}),
                          .weights = Tensor::view_of(weights.data(), Device::CPU, {m}),
                          .params = params,
                          .loss = Out(Tensor::view_of(out.loss.data(), Device::CPU, {m})),
                          .sample = Out(Tensor::view_of(out.sample.data(), Device::CPU, {m})),
                          .argmax = Out(Tensor::view_of(out.argmax.data(), Device::CPU, {m}))});
  return out;
}

}  // namespace

TEST_CASE("softmax_xent loss, dlogits and argmax match the direct formula", "[softmax_xent]") {
  const int64_t m = 6, v = 97, stride = 104;
  std::vector<float> x = test::random_vector<float>(m * stride, 11, -4, 4);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = v; j < stride; ++j) x[i * stride + j] = 50.0f;  // padding must be ignored
  }
  const std::vector<float> x0 = x;
  std::vector<int32_t> labels = {3, 96, 0, -7, 50, 12};  // row 3 is padding: label never read
  std::vector<float> weights = {1, 0.5f, 2, 0, 1, 1};
  SoftmaxXentParams params;
  params.vocab = v;
  params.scale = 0.25f;
  params.stream = RngStream{5, RngPurpose::kSample, 1, 0};
  const Outputs out = run(x, m, stride, labels, weights, params);
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x0.data() + i * stride;
    double max = -INFINITY, sum = 0;
    int32_t top = 0;
    for (int64_t j = 0; j < v; ++j) {
      if (row[j] > max) max = row[j], top = static_cast<int32_t>(j);
    }
    for (int64_t j = 0; j < v; ++j) sum += std::exp(row[j] - max);
    const double lse = max + std::log(sum);
    CHECK(out.argmax[i] == top);
    CHECK(out.sample[i] >= 0);
    CHECK(out.sample[i] < v);
    if (weights[i] == 0) {
      CHECK(out.loss[i] == 0.0f);
      for (int64_t j = 0; j < stride; ++j) REQUIRE(x[i * stride + j] == 0.0f);
      continue;
    }
    CHECK(out.loss[i] == Approx(weights[i] * (lse - row[labels[i]])).epsilon(1e-5));
    for (int64_t j = 0; j < stride; ++j) {
      const double expect =
          j >= v ? 0.0
                 : weights[i] * 0.25 * (std::exp(row[j] - lse) - (j == labels[i] ? 1.0 : 0.0));
      REQUIRE(x[i * stride + j] == Approx(expect).epsilon(1e-5).margin(1e-9));
    }
  }
}

TEST_CASE("softmax_xent breaks argmax ties to the lowest index and checks labels",
          "[softmax_xent]") {
  std::vector<float> x = {1, 3, 3, 2, 3};
  std::vector<int32_t> labels = {0};
  std::vector<float> weights = {1};
  SoftmaxXentParams params;
  params.vocab = 5;
  CHECK(run(x, 1, 5, labels, weights, params).argmax[0] == 1);
  labels[0] = 5;
  CHECK_THROWS_WITH(run(x, 1, 5, labels, weights, params),
                    Catch::Contains("outside the vocabulary"));
  params.vocab = 6;
  CHECK_THROWS_AS(run(x, 1, 5, labels, weights, params), Error);
}

// Rows longer than the vectorised max's registers and the 1024-column noise chunks: the first of
// equal maxima still wins wherever the copies lie, -0 ties +0, and a NaN after column 0 never wins.
TEST_CASE("softmax_xent argmax on long rows: first of the ties, NaN never wins", "[softmax_xent]") {
  const int64_t v = 2500;
  SoftmaxXentParams params;
  params.vocab = v;
  std::vector<int32_t> labels = {0};
  std::vector<float> weights = {1};
  const auto argmax = [&](std::vector<float> x) {
    return run(x, 1, v, labels, weights, params).argmax[0];
  };
  std::vector<float> x = test::random_vector<float>(v, 31, -4, 4);
  x[37] = x[1500] = x[2499] = 7.0f;
  CHECK(argmax(x) == 37);
  x[5] = std::nanf("");
  CHECK(argmax(x) == 37);
  std::vector<float> zeros(v, -1.0f);
  zeros[700] = -0.0f;
  zeros[1100] = 0.0f;
  CHECK(argmax(zeros) == 700);
}

// The fixed-point weight against 2^(31 + t) in f64, t rounded as sample_weight rounds it: within
// the header's bound 2^-20 relative, plus 1 for the truncation to an integer; the row's maximum
// weighs exactly 2^31 and -inf, NaN and t below -32 (the clamp) weigh 0.
TEST_CASE("softmax_xent's sample weights are 2^31 exp((x - max) / T) in fixed point",
          "[softmax_xent]") {
  for (float temperature : {1.0f, 0.7f, 2.0f}) {
    const float c = sample_exp2_scale(temperature);
    CHECK(sample_weight(1.5f, 1.5f, c) == uint64_t{1} << 31);
    CHECK(sample_weight(-INFINITY, 1.5f, c) == 0);
    CHECK(sample_weight(std::nanf(""), 1.5f, c) == 0);
    CHECK(sample_weight(-100.0f, 0.0f, c) == 0);
    const std::vector<float> x = test::random_vector<float>(200000, 5, -30, 3);
    double worst = 0;
    for (const float xj : x) {
      const float max = 3.0f;
      const double t = static_cast<double>((xj - max) * c);  // -ffp-contract=off: two roundings
      const double exact = std::ldexp(std::exp2(t), 31);
      const double got = static_cast<double>(sample_weight(xj, max, c));
      REQUIRE(std::abs(got - exact) <= 0x1.0p-20 * exact + 1.0);
      worst = std::max(worst, std::abs(got - exact) / exact);
    }
    INFO("temperature " << temperature << ": worst relative error " << worst);
    CHECK(worst > 0);  // the comparison saw the rounding (the check is not vacuous)
  }
}

// The host's SIMD weights (kernels/softmax_sample_cpu.h) are sample_weight's bits, lane by lane,
// for f32 and f64 rows of every length mod 16: random logits, logits whose t falls on and around
// half-integers (where the nearest integer n changes), the clamp's ends, zeros of both signs,
// subnormals, infinities and NaN.
TEST_CASE("softmax_xent's SIMD sample weights equal sample_weight", "[softmax_xent]") {
  std::vector<float> x = test::random_vector<float>(4000, 9, -40, 2);
  for (int k = -70; k <= 4; ++k) {
    const float half = 0.5f * static_cast<float>(k);
    x.insert(x.end(), {half, std::nextafter(half, -INFINITY), std::nextafter(half, INFINITY)});
  }
  x.insert(x.end(), {0.0f, -0.0f, 1e-40f, -1e-40f, INFINITY, -INFINITY, std::nanf(""), 2.0f, -30.0f,
                     -31.0f, -32.0f, -33.0f});
  for (const float max : {2.0f, 0.0f, -0.0f}) {
    for (const float temperature : {1.0f, 0.3f, 1.7f}) {
      const float c = sample_exp2_scale(temperature);
      for (const int64_t n :
           {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, static_cast<int64_t>(x.size())}) {
        std::vector<uint64_t> got(n), got64(n);
        const std::vector<double> x64(x.begin(), x.begin() + n);
        cpu::sample_weights(x.data(), n, max, c, got.data());
        cpu::sample_weights(x64.data(), n, max, c, got64.data());
        for (int64_t j = 0; j < n; ++j) {
          INFO("x " << x[j] << " max " << max << " T " << temperature);
          REQUIRE(got[j] == sample_weight(x[j], max, c));
          REQUIRE(got64[j] == got[j]);
        }
      }
    }
  }
}

// floor(total r / 2^32) by 64-bit pieces, checked at hand values: total = 2^32 gives r itself, and
// (2^62 + 5) (2^32 - 1) / 2^32 = 2^62 + 5 - 2^30 - 5 / 2^32 floors to 2^62 - 2^30 + 4.
TEST_CASE("softmax_xent's sample target is floor(total * r / 2^32)", "[softmax_xent]") {
  CHECK(sample_target(uint64_t{1} << 32, 12345u) == 12345u);
  CHECK(sample_target(3, 0x80000000u) == 1);
  CHECK(sample_target(3, 0xFFFFFFFFu) == 2);
  CHECK(sample_target((uint64_t{1} << 62) + 5, 0xFFFFFFFFu) ==
        (uint64_t{1} << 62) - (uint64_t{1} << 30) + 4);
  CHECK(sample_target(uint64_t{1} << 62, 0) == 0);
}

// The draw at hand-chosen words r: two equal columns split the 2^32 words at 2^31 exactly; r = 0
// takes the first column that weighs anything, r = 2^32 - 1 the last; a row whose other columns
// weigh 0 (one-hot) always gives its one column; a row without a finite logit gives -1.
TEST_CASE("softmax_xent's sample at u near 0 and near 1, and on one-hot rows", "[softmax_xent]") {
  const float c = sample_exp2_scale(1.0f), inf = INFINITY, nan = std::nanf("");
  const std::vector<float> two = {0.25f, 0.25f};
  CHECK(cpu::sample_column(two.data(), 2, c, 0x7FFFFFFFu) == 0);
  CHECK(cpu::sample_column(two.data(), 2, c, 0x80000000u) == 1);
  const std::vector<float> x = {-inf, 1.0f, 2.0f, nan, -0.5f, -inf};
  CHECK(cpu::sample_column(x.data(), 6, c, 0u) == 1);
  CHECK(cpu::sample_column(x.data(), 6, c, 0xFFFFFFFFu) == 4);
  for (const uint32_t r : {0u, 1u, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
    const std::vector<float> one_hot = {-inf, -inf, 7.0f, -inf};
    const std::vector<float> dominant = {-40.0f, 30.0f, -20.0f, -15.0f};  // others below 2^-31
    CHECK(cpu::sample_column(one_hot.data(), 4, c, r) == 2);
    CHECK(cpu::sample_column(dominant.data(), 4, c, r) == 1);
  }
  const std::vector<float> none = {-inf, nan, -inf};
  CHECK(cpu::sample_column(none.data(), 3, c, 0u) == -1);
}

// The op: every row of a one-hot logits matrix samples its column at any step, a row without a
// finite logit samples its argmax (0 here), and a step whose row-0 word is below 2^20 (u < 2^-12)
// draws the first column that weighs anything. The seeds are searched with the op's own stream.
TEST_CASE("softmax_xent samples one-hot rows and rows without finite logits", "[softmax_xent]") {
  const float inf = INFINITY;
  const int64_t v = 5;
  std::vector<int32_t> labels = {0, 0, 0};
  std::vector<float> weights = {0, 0, 0};
  SoftmaxXentParams params;
  params.vocab = v;
  for (uint32_t step = 0; step < 20; ++step) {
    params.stream = RngStream{3, RngPurpose::kSample, step, 0};
    std::vector<float> x = {-inf, -inf, -inf, 2.0f, -inf,  //
                            -inf, -inf, -inf, -inf, -inf,  //
                            5.0f, -inf, -inf, -inf, -inf};
    const Outputs out = run(x, 3, v, labels, weights, params);
    CHECK(out.sample == std::vector<int32_t>{3, 0, 0});
  }
  uint32_t step = 0;
  while (RngStream{8, RngPurpose::kSample, step, 0}.bits(0) >= (1u << 20) && step < 100000) ++step;
  REQUIRE(step < 100000);  // about one step in 4096 qualifies
  params.stream = RngStream{8, RngPurpose::kSample, step, 0};
  std::vector<float> x = {-inf, 0.0f, 0.0f, 0.0f, 0.0f};
  std::vector<int32_t> label = {0};
  std::vector<float> weight = {0};
  CHECK(run(x, 1, v, label, weight, params).sample[0] == 1);
}

// The frequencies of the samples of many rows with the same logits pass a chi-square test against
// softmax(x / T) at three temperatures, over a vocabulary whose probabilities run from 0.3 to 1e-5
// and columns below 2^-31 of the largest, which are never drawn; padded columns (with huge logits)
// are never drawn either. Bins expected below 5 draws are pooled (a chi-square approximation
// needs about 5 per bin); the bound is the 1 - 1e-4 quantile of chi-square with (bins - 1)
// degrees of freedom by Wilson and Hilferty's approximation, whose exact tail probability is
// 0.7e-4 to 0.9e-4 at 3 to 13 degrees (the incomplete gamma function, mpmath).
TEST_CASE("softmax_xent samples follow softmax(logits / T)", "[softmax_xent]") {
  const std::vector<float> base = {4.0f,  3.9f,  3.5f,  2.5f,  2.0f,  1.0f,   0.5f,   0.0f,
                                   -1.0f, -2.0f, -3.0f, -4.0f, -5.0f, -40.0f, -70.0f, -6.0f};
  const int64_t v = static_cast<int64_t>(base.size()), stride = v + 3, m = 2000, steps = 200;
  for (float temperature : {1.0f, 0.5f, 2.0f}) {
    INFO("temperature " << temperature);
    std::vector<double> p(v);
    double total = 0;
    for (int64_t j = 0; j < v; ++j) total += p[j] = std::exp((base[j] - 4.0) / temperature);
    std::vector<int64_t> counts(v, 0);
    for (uint32_t step = 0; step < steps; ++step) {
      std::vector<float> x(m * stride, 1e4f);
      for (int64_t i = 0; i < m; ++i) std::copy(base.begin(), base.end(), x.begin() + i * stride);
      std::vector<int32_t> labels(m, 0);
      std::vector<float> weights(m, 1.0f);
      SoftmaxXentParams params;
      params.vocab = v;
      params.temperature = temperature;
      params.stream = RngStream{99, RngPurpose::kSample, step, 0};
      for (int32_t s : run(x, m, stride, labels, weights, params).sample) {
        REQUIRE(s >= 0);
        REQUIRE(s < v);
        ++counts[s];
      }
    }
    const double draws = static_cast<double>(m * steps);
    for (int64_t j = 0; j < v; ++j) {
      if (p[j] / p[0] < 0x1.0p-31) CHECK(counts[j] == 0);
    }
    // Columns by expected count, smallest first; the smallest are pooled until the pool reaches 5.
    std::vector<int64_t> order(v);
    for (int64_t j = 0; j < v; ++j) order[j] = j;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] < p[b]; });
    double chi2 = 0, pool_expect = 0, pool_count = 0;
    int bins = 0;
    for (const int64_t j : order) {
      const double e = draws * p[j] / total;
      if (pool_expect < 5) {
        pool_expect += e;
        pool_count += static_cast<double>(counts[j]);
        if (pool_expect >= 5) {
          chi2 += (pool_count - pool_expect) * (pool_count - pool_expect) / pool_expect;
          ++bins;
        }
        continue;
      }
      chi2 += (static_cast<double>(counts[j]) - e) * (static_cast<double>(counts[j]) - e) / e;
      ++bins;
    }
    const double k = bins - 1, z = 3.719;  // z: the standard normal's 1 - 1e-4 quantile
    const double bound = k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
    INFO("chi2 " << chi2 << " over " << bins << " bins, bound " << bound);
    CHECK(bins >= 8);
    CHECK(chi2 < bound);
  }
}
