// copy_mlm (the all-tokens-mlm copy mechanism) on the CPU: the output distribution sums to 1 and
// is D [v == x] + (1 - D) softmax(z)(v); its prediction is that distribution's argmax; rows of
// weight 0 contribute nothing. Its gradients against central differences: copy_mlm_cases.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/copy_mlm.h"
#include "kernels/softmax_xent.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Rows {
  std::vector<double> loss, copy, dlogits;
  std::vector<int32_t> prediction;
};

// softmax_xent then copy_mlm on m rows of `stride` logits (the first `vocab` real).
Rows run(std::vector<double> logits, std::vector<double> copy, std::vector<int32_t> inputs,
         std::vector<int32_t> labels, std::vector<float> weights, int64_t vocab, int64_t stride,
         float scale) {
  Context ctx = Context::cpu(1, Precision::F64);
  const int64_t m = static_cast<int64_t>(labels.size());
  Rows r{std::vector<double>(m), std::move(copy), std::move(logits), std::vector<int32_t>(m)};
  std::vector<int32_t> samples(m);
  SoftmaxXentParams xent;
  xent.vocab = vocab;
  xent.scale = scale;
  xent.stream = RngStream{1, RngPurpose::kTest, 0, 0};
  const Tensor z = Tensor::view_of(r.dlogits.data(), Device::CPU, {m, stride});
  const Tensor y = Tensor::view_of(labels.data(), Device::CPU, {m});
  const Tensor w = Tensor::view_of(weights.data(), Device::CPU, {m});
  const Tensor loss = Tensor::view_of(r.loss.data(), Device::CPU, {m});
  const Tensor top = Tensor::view_of(r.prediction.data(), Device::CPU, {m});
  run_op(ctx, SoftmaxXent{.logits = Out(z),
                          .labels = y,
                          .weights = w,
                          .params = xent,
                          .loss = Out(loss),
                          .sample = Out(Tensor::view_of(samples.data(), Device::CPU, {m})),
                          .argmax = Out(top)});
  run_op(ctx, CopyMlm{.copy_logits = Tensor::view_of(r.copy.data(), Device::CPU, {m}),
                      .inputs = Tensor::view_of(inputs.data(), Device::CPU, {m}),
                      .labels = y,
                      .weights = w,
                      .scale = scale,
                      .xent_loss = Out(loss),
                      .dlogits = Out(z),
                      .argmax = Out(top)});
  return r;
}

}  // namespace

TEST_CASE("the copy mechanism's distribution sums to 1 and its prediction is its argmax",
          "[copy_mlm]") {
  const int64_t v = 50;
  const std::vector<double> z = test::random_vector<double>(v, 5, -3.0, 3.0);
  double zmax = z[0], total = 0;
  int32_t top = 0;
  for (int64_t j = 0; j < v; ++j) {
    if (z[j] > zmax) zmax = z[j], top = static_cast<int32_t>(j);
  }
  for (int64_t j = 0; j < v; ++j) total += std::exp(z[j] - zmax);
  // x is not the MLM's argmax: a large copy logit predicts x, a small one the argmax.
  const int32_t x = (top + 7) % v;
  for (const double c : {-3.0, 0.4, 3.0}) {
    INFO("copy logit " << c);
    // One row per possible label y, all with the same logits, copy logit and input x.
    std::vector<double> logits;
    std::vector<int32_t> labels;
    for (int64_t y = 0; y < v; ++y) {
      logits.insert(logits.end(), z.begin(), z.end());
      labels.push_back(static_cast<int32_t>(y));
    }
    const Rows r = run(logits, std::vector<double>(v, c), std::vector<int32_t>(v, x), labels,
                       std::vector<float>(v, 1.0f), v, v, 1.0f);
    const double d = 1 / (1 + std::exp(-c));
    double sum = 0, best = -1;
    int32_t argmax = -1;
    for (int64_t y = 0; y < v; ++y) {
      const double q = std::exp(-r.loss[y]);
      const double expected = d * (y == x) + (1 - d) * std::exp(z[y] - zmax) / total;
      CHECK(q == Approx(expected).epsilon(1e-12));
      sum += q;
      if (expected > best) best = expected, argmax = static_cast<int32_t>(y);
    }
    CHECK(sum == Approx(1.0).epsilon(1e-12));
    for (int64_t y = 0; y < v; ++y) CHECK(r.prediction[y] == argmax);
    CHECK(argmax == (c > 0 ? x : top));
  }
}

TEST_CASE("copy_mlm leaves a weight-0 row inert: loss, copy gradient and dlogits 0", "[copy_mlm]") {
  const int64_t v = 11, stride = 16, m = 4;
  std::vector<double> logits(m * stride, 0.0);
  const std::vector<double> noise = test::random_vector<double>(m * stride, 9, -2.0, 2.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < v; ++j) logits[i * stride + j] = noise[i * stride + j];
  }
  const std::vector<double> copy = {0.7, -1.2, 0.1, 2.0};
  const std::vector<int32_t> inputs = {3, 5, 2, 4};  // rows 0 and 3 copy their label
  const std::vector<int32_t> labels = {3, 6, 9, 4};
  const std::vector<float> weights = {1.0f, 0.5f, 1.0f, 0.0f};
  const float scale = 0.25f;
  const Rows base = run(logits, copy, inputs, labels, weights, v, stride, scale);
  CHECK(base.loss[3] == 0);
  CHECK(base.copy[3] == 0);
  for (int64_t j = 0; j < stride; ++j) CHECK(base.dlogits[3 * stride + j] == 0);
}
