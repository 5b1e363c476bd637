// dropout on the GPU against the CPU reference: the same mask bit for bit (vector and scalar
// paths, 4-aligned and unaligned site offsets), f32 outputs identical, bf16 outputs equal to the
// CPU's f32 result rounded once; applied again with the same site (as the backward is, to dy),
// it regenerates the same mask.
#include <catch2/catch.hpp>
#include <cstring>

#include "kernels/dropout.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_dropout(int64_t n, uint64_t offset, float p, DType dtype) {
  INFO("n " << n << ", offset " << offset << ", p " << p << ", " << dtype_name(dtype));
  Context gpu = Context::cuda(0, 77);
  Context cpu = Context::cpu(77);
  Arena arena("dropout", Device::CUDA, static_cast<size_t>(n) * 16 + (4 << 20));
  const DropoutSite site{gpu.rng(RngPurpose::kDropout, 12), offset, p};
  std::vector<float> x = test::as_dtype(test::random_vector<float>(n, n + 1, -3, 3, true), dtype);
  std::vector<float> expect(n), expect_back(n);
  run_op(cpu, Dropout{.x = Tensor::view_of(x.data(), Device::CPU, {n}),
                      .site = site,
                      .y = Out(Tensor::view_of(expect.data(), Device::CPU, {n}))});
  run_op(cpu, Dropout{.x = Tensor::view_of(x.data(), Device::CPU, {n}),
                      .site = site,
                      .y = Out(Tensor::view_of(expect_back.data(), Device::CPU, {n}))});
  const Tensor dx_in = test::upload_as(gpu, arena, x, dtype, {n});
  const Tensor y = arena.alloc(dtype, {n});
  const Tensor back = arena.alloc(dtype, {n});
  poison_tensor(gpu.stream(), y);
  poison_tensor(gpu.stream(), back);
  run_op(gpu, Dropout{.x = dx_in, .site = site, .y = Out(y)});
  run_op(gpu, Dropout{.x = dx_in, .site = site, .y = Out(back)});
  const std::vector<float> got = test::download_f32(gpu, y);
  const std::vector<float> got_back = test::download_f32(gpu, back);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float want = dtype == DType::F32 ? expect[i] : bf16_to_float(float_to_bf16(expect[i]));
    const float want_back =
        dtype == DType::F32 ? expect_back[i] : bf16_to_float(float_to_bf16(expect_back[i]));
    mismatches += std::memcmp(&got[i], &want, 4) != 0;
    mismatches += std::memcmp(&got_back[i], &want_back, 4) != 0;
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("dropout on the GPU equals the CPU bit for bit", "[dropout][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    check_dropout(8 * 128 * 256, dropout_site_offset(3), 0.1f, dtype);    // ELECTRA-Small
    check_dropout(2 * 512 * 768, dropout_site_offset(9), 0.1f, dtype);    // Base
    check_dropout(1000, dropout_site_offset(1) + 2, 0.5f, dtype);         // offset not 4-aligned
    check_dropout(7, 0, 0.3f, dtype);                                     // scalar kernel
    check_dropout(100 * 1000 + 3, dropout_site_offset(4), 0.25f, dtype);  // scalar, odd count
    check_dropout(4096, dropout_site_offset(2), 0.0f, dtype);             // identity
  }
}
