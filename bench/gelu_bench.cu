// bias + GELU forward and backward (bf16 activations, f32 bias) on the FFN intermediate of
// ELECTRA-Small (N = 128 * 128, 4H = 1024), Base (N = 32 * 512, 3072) and Large (4096), ours
// against one thread per element (forward; backward dx) plus one thread per column summing db.
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/gelu.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

__device__ float naive_gelu_grad(float u) {
  return 0.5f * (1.0f + erff(u * 0.70710678f)) + u * expf(-0.5f * u * u) * 0.39894228f;
}

__global__ void naive_forward(const __nv_bfloat16* x, const float* b, __nv_bfloat16* y, int64_t n,
                              int64_t h) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n * h) return;
  const float u = __bfloat162float(x[i]) + b[i % h];
  y[i] = __float2bfloat16_rn(0.5f * u * (1.0f + erff(u * 0.70710678f)));
}

__global__ void naive_backward_dx(const __nv_bfloat16* dy, const __nv_bfloat16* x, const float* b,
                                  __nv_bfloat16* dx, int64_t n, int64_t h) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n * h) return;
  dx[i] = __float2bfloat16_rn(__bfloat162float(dy[i]) *
                              naive_gelu_grad(__bfloat162float(x[i]) + b[i % h]));
}

__global__ void naive_backward_db(const __nv_bfloat16* dx, float* db, int64_t n, int64_t h) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= h) return;
  float sum = 0;
  for (int64_t r = 0; r < n; ++r) sum += __bfloat162float(dx[r * h + j]);
  db[j] += sum;
}

struct BenchShape {
  const char* name;
  int64_t n, h;
};

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  Context cpu = Context::cpu();
  const BenchShape shapes[] = {{"small_16384x1024", 128 * 128, 1024},
                               {"base_16384x3072", 32 * 512, 3072},
                               {"large_16384x4096", 32 * 512, 4096}};
  for (const BenchShape& s : shapes) {
    const int64_t n = s.n, h = s.h;
    Arena arena(
        "bench", Device::CUDA,
        static_cast<size_t>(n * h) * 8 + bias_gelu_backward_workspace_floats(n, h) * 4 + (1 << 20));
    std::vector<float> x = test::random_vector<float>(n * h, 1, -3, 3);
    std::vector<float> dy = test::random_vector<float>(n * h, 2, -1, 1);
    x = test::as_dtype(std::move(x), DType::BF16);
    dy = test::as_dtype(std::move(dy), DType::BF16);
    std::vector<float> b = test::random_vector<float>(h, 3, -1, 1);
    const Tensor gx = test::upload_bf16(ctx, arena, x, {n, h});
    const Tensor gdy = test::upload_bf16(ctx, arena, dy, {n, h});
    const Tensor gb = test::upload(ctx, arena, b, {h});
    const Tensor gy = arena.alloc<bf16>({n, h});
    const Tensor gdx = arena.alloc<bf16>({n, h});
    const Tensor gdb = arena.alloc<float>({h});
    const Tensor ws = arena.alloc<float>({bias_gelu_backward_workspace_floats(n, h)});
    zero_tensor(ctx.stream(), gdb);

    // Validate on the first 64 rows against the CPU reference (row blocks are independent).
    const int64_t rows = 64;
    std::vector<float> y(rows * h), dx(rows * h), db(h, 0.0f);
    const Tensor cx = Tensor::view_of(x.data(), Device::CPU, {rows, h});
    const Tensor cb = Tensor::view_of(b.data(), Device::CPU, {h});
    run_op(cpu, BiasGeluForward{
                    .x = cx, .b = cb, .y = Out(Tensor::view_of(y.data(), Device::CPU, {rows, h}))});
    run_op(cpu, BiasGeluBackward{.dy = Tensor::view_of(dy.data(), Device::CPU, {rows, h}),
                                 .x = cx,
                                 .b = cb,
                                 .dx = Out(Tensor::view_of(dx.data(), Device::CPU, {rows, h})),
                                 .db = Out(Tensor::view_of(db.data(), Device::CPU, {h})),
                                 .workspace = Out(Tensor{})});
    run_op(ctx, BiasGeluForward{.x = gx, .b = gb, .y = Out(gy)});
    run_op(ctx, BiasGeluBackward{.dy = gdy.rows(0, rows),
                                 .x = gx.rows(0, rows),
                                 .b = gb,
                                 .dx = Out(gdx.rows(0, rows)),
                                 .db = Out(gdb),
                                 .workspace = Out(ws)});
    const double fwd_err = test::max_relative_error(test::download_f32(ctx, gy.rows(0, rows)), y);
    const double dx_err = test::max_relative_error(test::download_f32(ctx, gdx.rows(0, rows)), dx);
    const double db_err = test::max_relative_error(test::download<float>(ctx, gdb), db);
    if (fwd_err > 2e-2 || dx_err > 2e-2 || db_err > 2e-2) {
      std::printf("FAILED validation of %s: y %g dx %g db %g\n", s.name, fwd_err, dx_err, db_err);
      return 1;
    }

    const double fwd_bytes = 2.0 * 2 * n * h + 4.0 * h;
    const double bwd_bytes = 3.0 * 2 * n * h + 8.0 * h;
    const auto* bx = static_cast<const __nv_bfloat16*>(gx.data);
    const auto* bdy = static_cast<const __nv_bfloat16*>(gdy.data);
    auto* by = static_cast<__nv_bfloat16*>(gy.data);
    auto* bdx = static_cast<__nv_bfloat16*>(gdx.data);
    const unsigned blocks = static_cast<unsigned>((n * h + 255) / 256);
    bench::report(ctx, "bias_gelu_fwd_bf16", s.name, "ours",
                  bench::time_median_ms(
                      ctx, [&] { run_op(ctx, BiasGeluForward{.x = gx, .b = gb, .y = Out(gy)}); }),
                  fwd_bytes, 0);
    bench::report(ctx, "bias_gelu_fwd_bf16", s.name, "baseline_naive",
                  bench::time_median_ms(ctx,
                                        [&] {
                                          naive_forward<<<blocks, 256, 0, ctx.stream()>>>(
                                              bx, gb.ptr<float>(), by, n, h);
                                        }),
                  fwd_bytes, 0);
    bench::report(ctx, "bias_gelu_bwd_bf16", s.name, "ours",
                  bench::time_median_ms(ctx,
                                        [&] {
                                          run_op(ctx, BiasGeluBackward{.dy = gdy,
                                                                       .x = gx,
                                                                       .b = gb,
                                                                       .dx = Out(gdx),
                                                                       .db = Out(gdb),
                                                                       .workspace = Out(ws)});
                                        }),
                  bwd_bytes, 0);
    bench::report(
        ctx, "bias_gelu_bwd_bf16", s.name, "baseline_naive",
        bench::time_median_ms(ctx,
                              [&] {
                                naive_backward_dx<<<blocks, 256, 0, ctx.stream()>>>(
                                    bdy, bx, gb.ptr<float>(), bdx, n, h);
                                naive_backward_db<<<(h + 255) / 256, 256, 0, ctx.stream()>>>(
                                    bdx, gdb.ptr<float>(), n, h);
                              }),
        bwd_bytes, 0);
  }
  return 0;
}
