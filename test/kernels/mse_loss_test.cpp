// mse_loss on the CPU: a hand-checked case and the in-place form (wrong shapes and dtypes:
// mse_loss_contract_test).
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/mse_loss.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// mse_loss over the rows of p, its dpredictions written to dp (which may be p itself).
template <class T>
void mse_loss(std::vector<T>& p, std::vector<float>& y, std::vector<float>& w, float scale,
              std::vector<T>& loss, std::vector<T>& dp) {
  Context ctx = Context::cpu();
  run_op(ctx, MseLoss{.predictions = test::view(p),
                      .targets = test::view(y),
                      .weights = test::view(w),
                      .scale = scale,
                      .loss = Out(test::view(loss)),
                      .dpredictions = Out(test::view(dp))});
}

}  // namespace

TEST_CASE("mse_loss loss and dpredictions on a hand case", "[mse_loss]") {
  // Rows: an exact hit, over and under the target, a half-weighted row, a padding row.
  std::vector<float> p = {0.5f, 1.0f, -0.25f, 2.0f, 7.0f};
  std::vector<float> y = {0.5f, 0.25f, 0.75f, 1.0f, 0.0f};
  std::vector<float> w = {1, 1, 1, 0.5f, 0};
  std::vector<float> loss(5, -1.0f), dp(5, -1.0f);
  mse_loss(p, y, w, 0.25f, loss, dp);
  CHECK(loss == std::vector<float>{0.0f, 0.5625f, 1.0f, 0.5f, 0.0f});
  // 2 * w * scale * (p - y) with scale 0.25.
  CHECK(dp == std::vector<float>{0.0f, 0.375f, -0.5f, 0.25f, 0.0f});
}

TEST_CASE("mse_loss writes dpredictions in place", "[mse_loss]") {
  std::vector<double> p = {0.3, -0.7, 1.2};
  std::vector<float> y = {0.1f, 0.2f, 0.3f};
  std::vector<float> w = {1, 1, 1};
  std::vector<double> loss(3);
  mse_loss(p, y, w, 1.0f, loss, p);
  CHECK(p[0] == Approx(2 * (0.3 - 0.1f)));
  CHECK(p[1] == Approx(2 * (-0.7 - 0.2f)));
  CHECK(p[2] == Approx(2 * (1.2 - 0.3f)));
  CHECK(loss[1] == Approx((-0.7 - 0.2f) * (-0.7 - 0.2f)));
}
