#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/disc_head.h"

using namespace electra;

TEST_CASE("disc_head loss, dlogits and counts on a hand case", "[disc_head]") {
  Context ctx = Context::cpu();
  // Tokens: TP, FP, TN, FN, TP with weight 0.5, padding (a wrong prediction that must not count),
  // and two extreme logits where a naive log(sigmoid) overflows.
  std::vector<float> z = {2.0f, 0.5f, -1.0f, -3.0f, 1.0f, 4.0f, 100.0f, -100.0f};
  std::vector<int32_t> y = {1, 0, 0, 1, 1, 0, 0, 1};
  std::vector<float> w = {1, 1, 1, 1, 0.5f, 0, 1, 1};
  const int64_t n = 8;
  std::vector<float> loss(n), dz(n), counts(kDiscCounts);
  run_op(ctx, DiscHead{.logits = Tensor::view_of(z.data(), Device::CPU, {n}),
                       .labels = Tensor::view_of(y.data(), Device::CPU, {n}),
                       .weights = Tensor::view_of(w.data(), Device::CPU, {n}),
                       .scale = 0.1f,
                       .loss = Out(Tensor::view_of(loss.data(), Device::CPU, {n})),
                       .dlogits = Out(Tensor::view_of(dz.data(), Device::CPU, {n})),
                       .counts = Out(Tensor::view_of(counts.data(), Device::CPU, {kDiscCounts})),
                       .workspace = Out(Tensor{})});
  double loss_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(z[i])));
    const double bce = y[i] == 1 ? -std::log(s) : -std::log1p(-s);
    const double expect_loss = i >= 6 ? 100.0 : w[i] * bce;  // log(sigmoid) underflows in f64 too
    CHECK(loss[i] == Approx(expect_loss).epsilon(1e-6));
    CHECK(dz[i] == Approx(w[i] * 0.1 * (s - y[i])).epsilon(1e-6).margin(1e-12));
    loss_sum += expect_loss;
  }
  CHECK(counts[kDiscCorrect] == 2.5f);  // tokens 0, 2, 4 (0.5)
  CHECK(counts[kDiscTruePositive] == 1.5f);
  CHECK(counts[kDiscPredictedPositive] == 3.5f);  // 0, 1, 4, 6
  CHECK(counts[kDiscActualPositive] == 3.5f);     // 0, 3, 4, 7
  CHECK(counts[kDiscWeight] == 6.5f);
  CHECK(counts[kDiscLoss] == Approx(loss_sum).epsilon(1e-6));
}

TEST_CASE("disc_head writes dlogits in place and rejects mismatched shapes", "[disc_head]") {
  Context ctx = Context::cpu();
  std::vector<float> z = {0.3f, -0.7f, 1.2f};
  std::vector<int32_t> y = {1, 0, 0};
  std::vector<float> w = {1, 1, 1};
  std::vector<float> loss(3), counts(kDiscCounts);
  const Tensor zt = Tensor::view_of(z.data(), Device::CPU, {3});
  run_op(ctx, DiscHead{.logits = zt,
                       .labels = Tensor::view_of(y.data(), Device::CPU, {3}),
                       .weights = Tensor::view_of(w.data(), Device::CPU, {3}),
                       .scale = 1.0f,
                       .loss = Out(Tensor::view_of(loss.data(), Device::CPU, {3})),
                       .dlogits = Out(zt),
                       .counts = Out(Tensor::view_of(counts.data(), Device::CPU, {kDiscCounts})),
                       .workspace = Out(Tensor{})});
  CHECK(z[0] == Approx(1.0 / (1.0 + std::exp(-0.3)) - 1.0));
  CHECK(z[1] == Approx(1.0 / (1.0 + std::exp(0.7))));
  CHECK(z[2] == Approx(1.0 / (1.0 + std::exp(-1.2))));
  CHECK_THROWS_AS(
      run_op(ctx,
             DiscHead{.logits = zt,
                      .labels = Tensor::view_of(y.data(), Device::CPU, {2}),
                      .weights = Tensor::view_of(w.data(), Device::CPU, {3}),
                      .scale = 1.0f,
                      .loss = Out(Tensor::view_of(loss.data(), Device::CPU, {3})),
                      .dlogits = Out(zt),
                      .counts = Out(Tensor::view_of(counts.data(), Device::CPU, {kDiscCounts})),
                      .workspace = Out(Tensor{})}),
      Error);
}
