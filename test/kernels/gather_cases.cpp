// gather of the masked positions (kernels/gather.h) for the op harness (test/common/op_case.h):
// gradient checks w.r.t. x with repeated positions at a small odd shape and ELECTRA-Small's
// (T = 128, H = 256, K = 19); GPU parity (rows copied exactly; the scatter-add in slot order bit
// for bit, in bf16 one f32 add and one rounding per slot) at Small (8 and 128 sequences), Base
// (2 and 32 sequences of 512) and awkward widths; benchmarks at Small, Base and Large with
// K = 15% of T; the backward with accumulate = false (every row written) against the scatter
// into zeros. Bad positions: gather_gpu_test.cpp; hand values and refusals: gather_test.cpp.
#include <algorithm>

#include "engine/bf16.h"
#include "kernels/gather.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

// dx += the scatter of dout (the reference's backward). A bf16 dx holds each slot's f32 sum
// rounded to bf16 before the next slot adds to it.
void scatter_reference(Context& ctx, const Args& a) {
  if (a.act() != DType::BF16) {
    run_op(ctx, GatherBackward{.dout = a["dout"], .positions = a["positions"], .dx = Out(a["dx"])});
    return;
  }
  const Tensor &dx = a["dx"], &dout = a["dout"];
  const int64_t t = dx.dim(1), w = dx.dim(2), k = a["positions"].dim(1);
  const int32_t* pos = a["positions"].ptr<int32_t>();
  for (int64_t s = 0; s < a["positions"].numel(); ++s) {
    float* row = dx.ptr<float>() + ((s / k) * t + pos[s]) * w;
    for (int64_t j = 0; j < w; ++j) {
      row[j] = bf16_to_float(float_to_bf16(row[j] + dout.ptr<float>()[s * w + j]));
    }
  }
}

// Random positions (which may repeat within a sequence); the last two slots of every sequence
// are 0 (padding slots repeat position 0), and so is the middle slot of the first: a position
// three slots share, whose first slot adds the others' rows on the GPU.
Fill slot_positions(int64_t batch, int64_t len, int64_t slots) {
  return {.make = [batch, len, slots](size_t n, uint64_t seed) {
    const std::vector<int32_t> ints = random_ints(n, seed, 0, static_cast<int32_t>(len - 1));
    std::vector<double> pos(ints.begin(), ints.end());
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t k = std::max<int64_t>(0, slots - 2); k < slots; ++k) pos[b * slots + k] = 0;
    }
    pos[slots / 2] = 0;
    return pos;
  }};
}

// The backward with accumulate = false: every row of dx written (its poisoned start overwritten),
// the same bits as the scatter into a zeroed dx.
OpCase gather_assign(const std::string& shape, int64_t batch, int64_t len, int64_t h,
                     int64_t slots) {
  return OpCase{
      .op = "gather_backward_assign",
      .shape = shape,
      .tensors = {input("positions", {batch, slots}, slot_positions(batch, len, slots), Kind::kI32),
                  input("dout", {batch * slots, h}), output("dx", {batch, len, h}).bits()},
      .forward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, GatherBackward{.dout = a["dout"],
                                       .positions = a["positions"],
                                       .dx = Out(a["dx"]),
                                       .accumulate = false});
          },
      .reference =
          [](Context& ctx, const Args& a) {
            zero_tensor(ctx.stream(), a["dx"]);
            scatter_reference(ctx, a);
          },
      .modes = kGpu,
  };
}

OpCase gather(const std::string& shape, int64_t batch, int64_t len, int64_t h, int64_t slots,
              unsigned modes, size_t max_checks = 0) {
  const double rows = static_cast<double>(batch * slots);
  return OpCase{
      .op = "gather",
      .shape = shape,
      .tensors = {input("x", {batch, len, h}),
                  input("positions", {batch, slots}, slot_positions(batch, len, slots), Kind::kI32),
                  output("out", {batch * slots, h}).bits(),
                  upstream("dout", "out", {batch * slots, h}),
                  grad_acc("dx", "x", {batch, len, h}, Kind::kAct).bits()},
      .forward =
          [](Context& ctx, const Args& a) {
            run_op(ctx,
                   GatherForward{.x = a["x"], .positions = a["positions"], .out = Out(a["out"])});
          },
      .backward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, GatherBackward{
                            .dout = a["dout"], .positions = a["positions"], .dx = Out(a["dx"])});
          },
      .reference =
          [](Context& ctx, const Args& a) {
            run_op(ctx,
                   GatherForward{.x = a["x"], .positions = a["positions"], .out = Out(a["out"])});
            scatter_reference(ctx, a);
          },
      .modes = modes,
      .max_checks = max_checks,
      // Only the gathered rows move: read and written once forward; dout read and each dx row
      // read and written backward; positions read.
      .bench_bytes =
          [rows, h](DType dtype, bool backward) {
            return (backward ? 3.0 : 2.0) * dtype_size(dtype) * rows * h + 4.0 * rows;
          },
  };
}

// K = 15% of T, rounded, as ELECTRA masks.
int64_t masked(int64_t len) {
  return (len * 15 + 50) / 100;
}

}  // namespace

std::vector<OpCase> op_cases() {
  const unsigned all = kGradcheck | kGpu;
  return {
      gather("3x5x7_K4", 3, 5, 7, 4, all),
      gather("small_2x128x256_K19", 2, 128, 256, 19, kGradcheck, 307),
      gather("small_8x128x256_K19", 8, 128, 256, 19, kGpu),
      gather("base_2x512x768_K77", 2, 512, 768, 77, kGpu),
      gather("2x33x100_K6", 2, 33, 100, 6, kGpu),
      gather("1x9x1000_K3", 1, 9, 1000, 3, kGpu),
      gather("small_128x128x256", 128, 128, 256, masked(128), kGpu | kBench),
      gather("base_32x512x768", 32, 512, 768, masked(512), kGpu | kBench),
      gather("large_32x512x1024", 32, 512, 1024, masked(512), kBench),
      gather_assign("3x5x7_K4", 3, 5, 7, 4),
      gather_assign("generator_8x128x64_K19", 8, 128, 64, 19),
      gather_assign("2x33x100_K6", 2, 33, 100, 6),
  };
}

}  // namespace electra::test
