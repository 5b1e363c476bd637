// gather on the GPU against the CPU reference: forward rows (exact), backward scatter-add with
// repeated positions (+=, slot order): f32 bit-identical to the CPU; bf16 equal to one f32 add and
// one rounding per slot, in slot order. ELECTRA-Small/Base and awkward widths; bad positions give
// NaN rows and are skipped by the backward.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gather.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_gather(int64_t batch, int64_t len, int64_t h, int64_t slots, DType dtype) {
  INFO("B " << batch << ", T " << len << ", H " << h << ", K " << slots << ", "
            << dtype_name(dtype));
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("gather", Device::CUDA, static_cast<size_t>(batch * len * h) * 16 + (16 << 20));
  std::vector<int32_t> pos =
      test::random_ints(batch * slots, batch + slots, 0, static_cast<int32_t>(len - 1));
  for (int64_t b = 0; b < batch; ++b) pos[b * slots + slots - 1] = 0;  // padding slots repeat 0
  pos[slots / 2] = 0;
  std::vector<float> x = test::as_dtype(test::random_vector<float>(batch * len * h, 1), dtype);
  std::vector<float> dout = test::as_dtype(test::random_vector<float>(batch * slots * h, 2), dtype);
  std::vector<float> dx0 = test::as_dtype(test::random_vector<float>(batch * len * h, 3), dtype);
  std::vector<float> out(batch * slots * h), dx = dx0;
  const Tensor cpu_pos = Tensor::view_of(pos.data(), Device::CPU, {batch, slots});
  run_op(cpu,
         GatherForward{.x = Tensor::view_of(x.data(), Device::CPU, {batch, len, h}),
                       .positions = cpu_pos,
                       .out = Out(Tensor::view_of(out.data(), Device::CPU, {batch * slots, h}))});
  if (dtype == DType::F32) {
    run_op(cpu,
           GatherBackward{.dout = Tensor::view_of(dout.data(), Device::CPU, {batch * slots, h}),
                          .positions = cpu_pos,
                          .dx = Out(Tensor::view_of(dx.data(), Device::CPU, {batch, len, h}))});
  } else {
    // bf16 dx: each slot's f32 sum is rounded to bf16 before the next slot adds to it.
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t k = 0; k < slots; ++k) {
        for (int64_t j = 0; j < h; ++j) {
          float& acc = dx[(b * len + pos[b * slots + k]) * h + j];
          acc = bf16_to_float(float_to_bf16(acc + dout[(b * slots + k) * h + j]));
        }
      }
    }
  }

  const Tensor gpos = test::upload(gpu, arena, pos, {batch, slots});
  const Tensor gx = test::upload_as(gpu, arena, x, dtype, {batch, len, h});
  const Tensor gout = arena.alloc(dtype, {batch * slots, h});
  poison_tensor(gpu.stream(), gout);
  run_op(gpu, GatherForward{.x = gx, .positions = gpos, .out = Out(gout)});
  CHECK(test::download_f32(gpu, gout) == out);  // a copy: exact
  const Tensor gdout = test::upload_as(gpu, arena, dout, dtype, {batch * slots, h});
  const Tensor gdx = test::upload_as(gpu, arena, dx0, dtype, {batch, len, h});
  run_op(gpu, GatherBackward{.dout = gdout, .positions = gpos, .dx = Out(gdx)});
  CHECK(test::download_f32(gpu, gdx) == dx);
}

}  // namespace

TEST_CASE("gather on the GPU matches the CPU reference", "[gather][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    check_gather(8, 128, 256, 19, dtype);  // ELECTRA-Small, 15% of 128
    check_gather(2, 512, 768, 77, dtype);  // Base
    check_gather(3, 5, 7, 4, dtype);
    check_gather(2, 33, 100, 6, dtype);
    check_gather(1, 9, 1000, 3, dtype);
  }
}

TEST_CASE("gather on the GPU marks out-of-range positions with NaN and skips them",
          "[gather][gpu]") {
  Context gpu = Context::cuda(0);
  Arena arena("gather", Device::CUDA, 1 << 20);
  std::vector<int32_t> pos = {1, 9, -1, 2};
  std::vector<float> x = test::random_vector<float>(4 * 8, 4);
  const Tensor gpos = test::upload(gpu, arena, pos, {1, 4});
  const Tensor gx = test::upload(gpu, arena, x, {1, 4, 8});
  const Tensor gout = arena.alloc<float>({4, 8});
  run_op(gpu, GatherForward{.x = gx, .positions = gpos, .out = Out(gout)});
  const std::vector<float> out = test::download<float>(gpu, gout);
  for (int j = 0; j < 8; ++j) {
    CHECK(out[j] == x[8 + j]);
    CHECK(std::isnan(out[8 + j]));
    CHECK(std::isnan(out[16 + j]));
    CHECK(out[24 + j] == x[16 + j]);
  }
  const Tensor gdx = test::upload(gpu, arena, x, {1, 4, 8});
  run_op(gpu,
         GatherBackward{
             .dout = gout, .positions = gpos, .dx = Out(gdx)});  // NaN rows belong to skipped slots
  const std::vector<float> dx = test::download<float>(gpu, gdx);
  for (int j = 0; j < 8; ++j) {
    CHECK(dx[j] == x[j]);
    CHECK(dx[8 + j] == 2 * x[8 + j]);
    CHECK(dx[16 + j] == 2 * x[16 + j]);
    CHECK(dx[24 + j] == x[24 + j]);
  }
}
