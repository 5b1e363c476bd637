// mse_loss dpredictions against central differences of scale * sum(loss) in f64.
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/mse_loss.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("mse_loss dpredictions match central differences in f64", "[mse_loss][gradcheck]") {
  const int64_t n = 48;
  Context ctx = Context::cpu();
  std::vector<double> p = test::random_vector<double>(n, 41, -2, 2);
  std::vector<float> targets = test::random_vector<float>(n, 42, 0, 1);
  std::vector<float> weights(n, 1.0f);
  for (int64_t i = 40; i < n; ++i) weights[i] = 0.0f;  // padding
  weights[5] = 0.5f;
  const float scale = 1.0f / 39.5f;
  std::vector<double> loss(n), dp(n);
  auto evaluate = [&] {
    run_op(ctx, MseLoss{.predictions = test::view(p),
                        .targets = test::view(targets),
                        .weights = test::view(weights),
                        .scale = scale,
                        .loss = Out(test::view(loss)),
                        .dpredictions = Out(test::view(dp))});
    double total = 0;
    for (double l : loss) total += l;
    return total * static_cast<double>(scale);
  };
  evaluate();
  const std::vector<double> analytic = dp;
  for (int64_t i = 40; i < n; ++i) CHECK(analytic[i] == 0.0);
  const test::GradcheckResult result = test::gradcheck(p, analytic, evaluate, 1e-4);
  CHECK(result.checked == static_cast<size_t>(n));
  CHECK(result.max_relative_error < 1e-6);
}
