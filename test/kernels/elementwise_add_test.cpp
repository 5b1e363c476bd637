#include <catch2/catch.hpp>
#include <vector>

#include "kernels/elementwise_add.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("elementwise_add adds f32 and f64 with one rounding, in place too", "[elementwise_add]") {
  Context ctx = Context::cpu(3);
  const int64_t n = 200001;  // several tasks and a partial one
  const std::vector<float> a = test::random_vector<float>(n, 1, -1, 1);
  const std::vector<float> b = test::random_vector<float>(n, 2, -1e-3, 1e-3);
  std::vector<float> out(n, 7.0f);
  run_op(ctx, ElementwiseAdd{.a = Tensor::view_of(const_cast<float*>(a.data()), Device::CPU, {n}),
                             .b = Tensor::view_of(const_cast<float*>(b.data()), Device::CPU, {n}),
                             .out = Out(Tensor::view_of(out.data(), Device::CPU, {n}))});
  for (int64_t i = 0; i < n; ++i) REQUIRE(out[i] == a[i] + b[i]);
  // 1 + 2^-24 rounds to 1 (a tie goes to even) in f32 but not in f64.
  std::vector<float> one = {1.0f}, tiny = {0x1.0p-24f};
  run_op(ctx, ElementwiseAdd{.a = Tensor::view_of(one.data(), Device::CPU, {1}),
                             .b = Tensor::view_of(tiny.data(), Device::CPU, {1}),
                             .out = Out(Tensor::view_of(one.data(), Device::CPU, {1}))});
  CHECK(one[0] == 1.0f);
  std::vector<double> x = {1.0, 2.5}, y = {0x1.0p-24, -0.5};
  run_op(ctx, ElementwiseAdd{.a = Tensor::view_of(x.data(), Device::CPU, {2}),
                             .b = Tensor::view_of(y.data(), Device::CPU, {2}),
                             .out = Out(Tensor::view_of(y.data(), Device::CPU, {2}))});
  CHECK(y == std::vector<double>{1.0 + 0x1.0p-24, 2.0});
}

// Mixed dtypes and sizes: elementwise_add_contract_test.
TEST_CASE("elementwise_add refuses integer tensors", "[elementwise_add]") {
  Context ctx = Context::cpu();
  std::vector<int32_t> i(2);
  const Tensor ti = Tensor::view_of(i.data(), Device::CPU, {2});
  CHECK_THROWS_WITH(run_op(ctx, ElementwiseAdd{.a = ti, .b = ti, .out = Out(ti)}),
                    Catch::Contains("f32 or f64"));
}
