// cast on the CPU: bf16 rounding to nearest even, f32 <-> f64, and the pairs it refuses.
#include <catch2/catch.hpp>

#include "kernels/cast.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("cast f32 -> bf16 -> f32 rounds each value to nearest even", "[cast]") {
  Context ctx = Context::cpu();
  std::vector<float> x = test::random_vector<float>(1001, 1, -100, 100);
  x[0] = 1.00390625f;  // a tie: stays 1.0
  std::vector<bf16> y(x.size());
  std::vector<float> back(x.size());
  run_op(ctx, Cast{.in = Tensor::view_of(x.data(), Device::CPU, {7, 143}),
                   .out = Out(Tensor::view_of(y.data(), Device::CPU, {1001}))});
  run_op(ctx, Cast{.in = Tensor::view_of(y.data(), Device::CPU, {1001}),
                   .out = Out(Tensor::view_of(back.data(), Device::CPU, {1001}))});
  CHECK(back[0] == 1.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    REQUIRE(std::abs(back[i] - x[i]) <= std::abs(x[i]) * 0x1.0p-8f);
  }
}

// A wrong size: cast_contract_test; its other dtype is always f32 or f64, so f32 -> i32 is here.
TEST_CASE("cast f32 <-> f64 and refuses other pairs", "[cast]") {
  Context ctx = Context::cpu();
  std::vector<float> x = {1.5f, -2.25f};
  std::vector<double> y(2);
  run_op(ctx, Cast{.in = Tensor::view_of(x.data(), Device::CPU, {2}),
                   .out = Out(Tensor::view_of(y.data(), Device::CPU, {2}))});
  CHECK(y == std::vector<double>{1.5, -2.25});
  std::vector<int32_t> ints(2);
  CHECK_THROWS_WITH(run_op(ctx, Cast{.in = Tensor::view_of(x.data(), Device::CPU, {2}),
                                     .out = Out(Tensor::view_of(ints.data(), Device::CPU, {2}))}),
                    Catch::Contains("unsupported pair"));
}
