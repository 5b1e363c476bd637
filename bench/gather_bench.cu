// gather of masked positions (bf16, K = 15% of T) at ELECTRA-Small (B = 128, T = 128, H = 256),
// Base (B = 32, T = 512, H = 768) and Large (H = 1024): forward ours against one thread per
// element; backward ours (deterministic, slot order) against a float-atomic scatter on f32 dx.
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/gather.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

__global__ void naive_forward(const __nv_bfloat16* x, const int32_t* pos, __nv_bfloat16* out,
                              int64_t len, int64_t h, int64_t slots, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t slot = i / h, j = i % h, b = slot / slots;
  out[i] = x[(b * len + pos[slot]) * h + j];
}

__global__ void atomic_backward(const float* dout, const int32_t* pos, float* dx, int64_t len,
                                int64_t h, int64_t slots, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t slot = i / h, j = i % h, b = slot / slots;
  atomicAdd(dx + (b * len + pos[slot]) * h + j, dout[i]);
}

struct BenchShape {
  const char* name;
  int64_t batch, len, h;
};

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  Context cpu = Context::cpu();
  const BenchShape shapes[] = {{"small_128x128x256", 128, 128, 256},
                               {"base_32x512x768", 32, 512, 768},
                               {"large_32x512x1024", 32, 512, 1024}};
  for (const BenchShape& s : shapes) {
    const int64_t batch = s.batch, len = s.len, h = s.h, slots = (len * 15 + 50) / 100;
    const int64_t rows = batch * slots;
    Arena arena("bench", Device::CUDA, static_cast<size_t>(batch * len * h) * 8 + (16 << 20));
    std::vector<int32_t> pos = test::random_ints(rows, 1, 0, static_cast<int32_t>(len - 1));
    std::vector<float> x = test::random_vector<float>(batch * len * h, 2);
    x = test::as_dtype(std::move(x), DType::BF16);
    const Tensor gpos = test::upload(ctx, arena, pos, {batch, slots});
    const Tensor gx = test::upload_bf16(ctx, arena, x, {batch, len, h});
    const Tensor gout = arena.alloc<bf16>({rows, h});
    const Tensor gdx = arena.alloc<bf16>({batch, len, h});
    std::vector<float> out(rows * h);
    run_op(cpu, GatherForward{.x = Tensor::view_of(x.data(), Device::CPU, {batch, len, h}),
                              .positions = Tensor::view_of(pos.data(), Device::CPU, {batch, slots}),
                              .out = Out(Tensor::view_of(out.data(), Device::CPU, {rows, h}))});
    run_op(ctx, GatherForward{.x = gx, .positions = gpos, .out = Out(gout)});
    if (test::download_f32(ctx, gout) != out) {
      std::printf("FAILED validation of %s\n", s.name);
      return 1;
    }
    const double fwd_bytes = 2.0 * 2 * rows * h + 4.0 * rows;
    const double bwd_bytes = 3.0 * 2 * rows * h + 4.0 * rows;
    bench::report(
        ctx, "gather_fwd_bf16", s.name, "ours",
        bench::time_median_ms(
            ctx, [&] { run_op(ctx, GatherForward{.x = gx, .positions = gpos, .out = Out(gout)}); }),
        fwd_bytes, 0);
    bench::report(ctx, "gather_fwd_bf16", s.name, "baseline_naive",
                  bench::time_median_ms(
                      ctx,
                      [&] {
                        naive_forward<<<(rows * h + 255) / 256, 256, 0, ctx.stream()>>>(
                            static_cast<const __nv_bfloat16*>(gx.data), gpos.ptr<int32_t>(),
                            static_cast<__nv_bfloat16*>(gout.data), len, h, slots, rows * h);
                      }),
                  fwd_bytes, 0);
    bench::report(
        ctx, "gather_bwd_bf16", s.name, "ours",
        bench::time_median_ms(
            ctx,
            [&] { run_op(ctx, GatherBackward{.dout = gout, .positions = gpos, .dx = Out(gdx)}); }),
        bwd_bytes, 0);
    const Tensor fdout = arena.alloc<float>({rows, h});
    const Tensor fdx = arena.alloc<float>({batch, len, h});
    zero_tensor(ctx.stream(), fdout);
    zero_tensor(ctx.stream(), fdx);
    bench::report(
        ctx, "gather_bwd_f32", s.name, "baseline_atomic",
        bench::time_median_ms(ctx,
                              [&] {
                                atomic_backward<<<(rows * h + 255) / 256, 256, 0, ctx.stream()>>>(
                                    fdout.ptr<float>(), gpos.ptr<int32_t>(), fdx.ptr<float>(), len,
                                    h, slots, rows * h);
                              }),
        2 * bwd_bytes, 0);
  }
  return 0;
}
