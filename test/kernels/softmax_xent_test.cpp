#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

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
  params.stream = RngStream{5, RngPurpose::kGumbel, 1, 0};
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

// Gumbel-max draws are exact samples of softmax(x / T): over many rows and steps the frequencies
// pass a chi-square test, and padded columns (with huge logits) are never drawn.
TEST_CASE("softmax_xent samples follow softmax(logits / T)", "[softmax_xent]") {
  const int64_t v = 8, stride = 9, m = 1000;
  const std::vector<float> base = {0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -2.0f, 1.5f, 0.25f};
  for (float temperature : {1.0f, 0.5f, 2.0f}) {
    std::vector<double> expect(v);
    double total = 0;
    for (int64_t j = 0; j < v; ++j) total += expect[j] = std::exp(base[j] / temperature);
    std::vector<int64_t> counts(v, 0);
    int64_t draws = 0;
    for (uint32_t step = 0; step < 8; ++step) {
      std::vector<float> x(m * stride);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < v; ++j) x[i * stride + j] = base[j];
        x[i * stride + v] = 1e4f;
      }
      std::vector<int32_t> labels(m, 0);
      std::vector<float> weights(m, 1.0f);
      SoftmaxXentParams params;
      params.vocab = v;
      params.temperature = temperature;
      params.stream = RngStream{99, RngPurpose::kGumbel, step, 0};
      const Outputs out = run(x, m, stride, labels, weights, params);
      for (int32_t s : out.sample) {
        REQUIRE(s >= 0);
        REQUIRE(s < v);
        ++counts[s];
        ++draws;
      }
    }
    double chi2 = 0;
    for (int64_t j = 0; j < v; ++j) {
      const double e = draws * expect[j] / total;
      chi2 += (counts[j] - e) * (counts[j] - e) / e;
    }
    INFO("temperature " << temperature << " chi2 " << chi2);
    CHECK(chi2 < 29.9);  // chi-square with 7 degrees of freedom: P(> 29.9) < 1e-4
  }
}
