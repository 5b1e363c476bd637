// disc_head on the CPU: loss, dlogits and counts on a hand case (extreme logits, a padding token,
// a half weight), and dlogits written over the logits (wrong shapes and dtypes:
// disc_head_contract_test).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/disc_head.h"

using namespace electra;

namespace {

// disc_head over the tokens of y, its dlogits written to `dlogits` (which may view the logits).
void disc_head(Context& ctx, const Tensor& logits, std::vector<int32_t>& y, std::vector<float>& w,
               float scale, std::vector<float>& loss, const Tensor& dlogits,
               std::vector<float>& counts) {
  const auto n = static_cast<int64_t>(y.size());
  run_op(ctx, DiscHead{.logits = logits,
                       .labels = Tensor::view_of(y.data(), Device::CPU, {n}),
                       .weights = Tensor::view_of(w.data(), Device::CPU, {n}),
                       .scale = scale,
                       .loss = Out(Tensor::view_of(loss.data(), Device::CPU, {n})),
                       .dlogits = Out(dlogits),
                       .counts = Out(Tensor::view_of(counts.data(), Device::CPU, {kDiscCounts})),
                       .workspace = Out(Tensor{})});
}

}  // namespace

TEST_CASE("disc_head loss, dlogits and counts on a hand case", "[disc_head]") {
  Context ctx = Context::cpu();
  // Tokens: TP, FP, TN, FN, TP with weight 0.5, padding (a wrong prediction that must not count),
  // and two extreme logits where a naive log(sigmoid) overflows.
  std::vector<float> z = {2.0f, 0.5f, -1.0f, -3.0f, 1.0f, 4.0f, 100.0f, -100.0f};
  std::vector<int32_t> y = {1, 0, 0, 1, 1, 0, 0, 1};
  std::vector<float> w = {1, 1, 1, 1, 0.5f, 0, 1, 1};
  const int64_t n = 8;
  std::vector<float> loss(n), dz(n), counts(kDiscCounts);
  disc_head(ctx, Tensor::view_of(z.data(), Device::CPU, {n}), y, w, 0.1f, loss,
            Tensor::view_of(dz.data(), Device::CPU, {n}), counts);
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

TEST_CASE("disc_head writes dlogits in place", "[disc_head]") {
  Context ctx = Context::cpu();
  std::vector<float> z = {0.3f, -0.7f, 1.2f};
  std::vector<int32_t> y = {1, 0, 0};
  std::vector<float> w = {1, 1, 1};
  std::vector<float> loss(3), counts(kDiscCounts);
  const Tensor zt = Tensor::view_of(z.data(), Device::CPU, {3});
  disc_head(ctx, zt, y, w, 1.0f, loss, zt, counts);
  CHECK(z[0] == Approx(1.0 / (1.0 + std::exp(-0.3)) - 1.0));
  CHECK(z[1] == Approx(1.0 / (1.0 + std::exp(0.7))));
  CHECK(z[2] == Approx(1.0 / (1.0 + std::exp(-1.2))));
}
