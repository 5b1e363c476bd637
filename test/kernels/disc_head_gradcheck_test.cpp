#include <catch2/catch.hpp>
#include <vector>

#include "kernels/disc_head.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("disc_head dlogits match central differences in f64", "[disc_head][gradcheck]") {
  const int64_t n = 64;
  Context ctx = Context::cpu();
  std::vector<double> z = test::random_vector<double>(n, 31, -5, 5);
  std::vector<int32_t> labels = test::random_ints(n, 32, 0, 1);
  std::vector<float> weights(n, 1.0f);
  for (int64_t i = 48; i < n; ++i) weights[i] = 0.0f;  // padding
  weights[3] = 0.5f;
  const float scale = 1.0f / 47.5f;
  std::vector<double> loss(n), dz(n), counts(kDiscCounts);
  auto evaluate = [&] {
    run_op(ctx, DiscHead{.logits = Tensor::view_of(z.data(), Device::CPU, {n}),
                         .labels = Tensor::view_of(labels.data(), Device::CPU, {n}),
                         .weights = Tensor::view_of(weights.data(), Device::CPU, {n}),
                         .scale = scale,
                         .loss = Out(Tensor::view_of(loss.data(), Device::CPU, {n})),
                         .dlogits = Out(Tensor::view_of(dz.data(), Device::CPU, {n})),
                         .counts = Out(Tensor::view_of(counts.data(), Device::CPU, {kDiscCounts})),
                         .workspace = Out(Tensor{})});
    double total = 0;
    for (double l : loss) total += l;
    return total * static_cast<double>(scale);
  };
  evaluate();
  const std::vector<double> analytic = dz;
  for (int64_t i = 48; i < n; ++i) CHECK(analytic[i] == 0.0);
  const test::GradcheckResult result = test::gradcheck(z, analytic, evaluate, 1e-4);
  CHECK(result.checked == static_cast<size_t>(n));
  CHECK(result.max_relative_error < 1e-6);
}
