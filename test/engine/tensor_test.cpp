#include <catch2/catch.hpp>
#include <vector>

#include "engine/tensor.h"

using namespace electra;

TEST_CASE("Tensor views report shape, size and dtype", "[tensor]") {
  std::vector<float> storage(24);
  Tensor t = Tensor::view_of(storage.data(), Device::CPU, {2, 3, 4});
  CHECK(t.rank == 3);
  CHECK(t.numel() == 24);
  CHECK(t.nbytes() == 96);
  CHECK(t.dim(0) == 2);
  CHECK(t.dim(-1) == 4);
  CHECK(t.str() == "f32[2,3,4]@cpu");
  CHECK(t.ptr<float>() == storage.data());
  CHECK_THROWS_WITH(t.ptr<double>(), Catch::Contains("f32[2,3,4]@cpu") && Catch::Contains("f64"));
  CHECK_THROWS_AS(t.dim(3), Error);
}

TEST_CASE("Tensor rejects rank above 4 and negative dims", "[tensor]") {
  CHECK_THROWS_WITH(Tensor::view_of(nullptr, DType::F32, Device::CPU, {1, 1, 1, 1, 1}),
                    Catch::Contains("rank 5"));
  CHECK_THROWS_WITH(Tensor::view_of(nullptr, DType::F32, Device::CPU, {2, -1}),
                    Catch::Contains("negative dimension"));
}

TEST_CASE("Tensor reshape and rows keep the memory", "[tensor]") {
  std::vector<int32_t> storage(12);
  for (int i = 0; i < 12; ++i) storage[i] = i;
  Tensor t = Tensor::view_of(storage.data(), Device::CPU, {3, 4});
  Tensor flat = t.reshape({12});
  CHECK(flat.numel() == 12);
  CHECK_THROWS_AS(t.reshape({5}), Error);
  Tensor middle = t.rows(1, 3);
  CHECK(middle.str() == "i32[2,4]@cpu");
  CHECK(middle.ptr<int32_t>()[0] == 4);
  CHECK_THROWS_AS(t.rows(2, 4), Error);
}

TEST_CASE("dtype sizes and names", "[tensor]") {
  CHECK(dtype_size(DType::F32) == 4);
  CHECK(dtype_size(DType::BF16) == 2);
  CHECK(dtype_size(DType::F16) == 2);
  CHECK(dtype_size(DType::F64) == 8);
  CHECK(dtype_size(DType::I32) == 4);
  CHECK(dtype_size(DType::U16) == 2);
  CHECK(std::string(dtype_name(DType::BF16)) == "bf16");
}

TEST_CASE("shape and dtype checks name the tensor", "[tensor]") {
  std::vector<float> storage(6);
  Tensor t = Tensor::view_of(storage.data(), Device::CPU, {2, 3});
  CHECK_NOTHROW(check_shape(t, {2, 3}, "x"));
  CHECK_THROWS_WITH(check_shape(t, {3, 2}, "input x"), Catch::Contains("input x") &&
                                                           Catch::Contains("f32[3,2]") &&
                                                           Catch::Contains("f32[2,3]"));
  CHECK_THROWS_WITH(check_dtype(t, DType::BF16, "w"), Catch::Contains("bf16"));
  Tensor u = t.reshape({6});
  CHECK_THROWS_AS(check_same_shape(t, u, "a/b"), Error);
}

TEST_CASE("bf16 rounds to nearest even and is exact back to float", "[tensor][bf16]") {
  CHECK(float_to_bf16(1.0f).bits == 0x3f80);
  CHECK(bf16_to_float(float_to_bf16(1.0f)) == 1.0f);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even keeps 1.0.
  CHECK(float_to_bf16(1.00390625f).bits == 0x3f80);
  // 1 + 3 * 2^-8 is halfway too: ties to even rounds up to 1 + 2^-6.
  CHECK(float_to_bf16(1.01171875f).bits == 0x3f82);
  CHECK(float_to_bf16(-2.5f).bits == 0xc020);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(bf16_to_float(float_to_bf16(nan))));
  CHECK(std::isinf(bf16_to_float(float_to_bf16(std::numeric_limits<float>::infinity()))));
}
