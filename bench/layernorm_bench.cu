// layernorm forward and backward (bf16 activations, f32 parameters and statistics) at
// ELECTRA-Small (N = 128 * 128, H = 256), Base (N = 32 * 512, H = 768) and Large (H = 1024), ours
// against one thread per row (forward, backward dx) plus one thread per column for dgamma/dbeta.
// Bytes are the ideal traffic: forward reads x and writes y; backward reads dy and x, writes dx.
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/layernorm.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

__global__ void naive_forward(const __nv_bfloat16* x, const float* gamma, const float* beta,
                              __nv_bfloat16* y, float* mean, float* rstd, int64_t n, int64_t h) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= n) return;
  const __nv_bfloat16* row = x + r * h;
  float sum = 0, sq = 0;
  for (int64_t j = 0; j < h; ++j) sum += __bfloat162float(row[j]);
  const float mu = sum / h;
  for (int64_t j = 0; j < h; ++j) {
    const float d = __bfloat162float(row[j]) - mu;
    sq += d * d;
  }
  const float rs = 1.0f / sqrtf(sq / h + 1e-12f);
  for (int64_t j = 0; j < h; ++j) {
    y[r * h + j] = __float2bfloat16_rn((__bfloat162float(row[j]) - mu) * rs * gamma[j] + beta[j]);
  }
  mean[r] = mu;
  rstd[r] = rs;
}

__global__ void naive_backward_dx(const __nv_bfloat16* dy, const __nv_bfloat16* x,
                                  const float* gamma, const float* mean, const float* rstd,
                                  __nv_bfloat16* dx, int64_t n, int64_t h) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= n) return;
  float sum_g = 0, sum_gx = 0;
  for (int64_t j = 0; j < h; ++j) {
    const float g = __bfloat162float(dy[r * h + j]) * gamma[j];
    sum_g += g;
    sum_gx += g * (__bfloat162float(x[r * h + j]) - mean[r]) * rstd[r];
  }
  for (int64_t j = 0; j < h; ++j) {
    const float xhat = (__bfloat162float(x[r * h + j]) - mean[r]) * rstd[r];
    const float g = __bfloat162float(dy[r * h + j]) * gamma[j];
    dx[r * h + j] = __float2bfloat16_rn(rstd[r] * (g - sum_g / h - xhat * sum_gx / h));
  }
}

__global__ void naive_backward_params(const __nv_bfloat16* dy, const __nv_bfloat16* x,
                                      const float* mean, const float* rstd, float* dgamma,
                                      float* dbeta, int64_t n, int64_t h) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= h) return;
  float dg = 0, db = 0;
  for (int64_t r = 0; r < n; ++r) {
    const float d = __bfloat162float(dy[r * h + j]);
    dg += d * (__bfloat162float(x[r * h + j]) - mean[r]) * rstd[r];
    db += d;
  }
  dgamma[j] += dg;
  dbeta[j] += db;
}

struct BenchShape {
  const char* name;
  int64_t n, h;
};

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  Context cpu = Context::cpu();
  const BenchShape shapes[] = {{"small_16384x256", 128 * 128, 256},
                               {"base_16384x768", 32 * 512, 768},
                               {"large_16384x1024", 32 * 512, 1024}};
  for (const BenchShape& s : shapes) {
    const int64_t n = s.n, h = s.h;
    Arena arena(
        "bench", Device::CUDA,
        static_cast<size_t>(n * h) * 8 + layernorm_backward_workspace_floats(n, h) * 4 + (1 << 20));
    std::vector<float> x = test::random_vector<float>(n * h, 1, -2, 3);
    std::vector<float> dy = test::random_vector<float>(n * h, 2, -1, 1);
    x = test::as_dtype(std::move(x), DType::BF16);
    dy = test::as_dtype(std::move(dy), DType::BF16);
    std::vector<float> gamma = test::random_vector<float>(h, 3, 0.5, 1.5);
    std::vector<float> beta = test::random_vector<float>(h, 4, -1, 1);
    const Tensor gx = test::upload_bf16(ctx, arena, x, {n, h});
    const Tensor gdy = test::upload_bf16(ctx, arena, dy, {n, h});
    const Tensor ggamma = test::upload(ctx, arena, gamma, {h});
    const Tensor gbeta = test::upload(ctx, arena, beta, {h});
    const Tensor gy = arena.alloc<bf16>({n, h});
    const Tensor gdx = arena.alloc<bf16>({n, h});
    const Tensor gmean = arena.alloc<float>({n});
    const Tensor grstd = arena.alloc<float>({n});
    const Tensor gdgamma = arena.alloc<float>({h});
    const Tensor gdbeta = arena.alloc<float>({h});
    const Tensor ws = arena.alloc<float>({layernorm_backward_workspace_floats(n, h)});
    zero_tensor(ctx.stream(), gdgamma);
    zero_tensor(ctx.stream(), gdbeta);

    // Validate the first 64 rows against the CPU reference.
    const int64_t rows = 64;
    std::vector<float> y(rows * h), mean(rows), rstd(rows), dx(rows * h), dgamma(h, 0.0f),
        dbeta(h, 0.0f);
    const Tensor cx = Tensor::view_of(x.data(), Device::CPU, {rows, h});
    const Tensor cgamma = Tensor::view_of(gamma.data(), Device::CPU, {h});
    const Tensor cmean = Tensor::view_of(mean.data(), Device::CPU, {rows});
    const Tensor crstd = Tensor::view_of(rstd.data(), Device::CPU, {rows});
    run_op(cpu, LayerNormForward{.x = cx,
                                 .gamma = cgamma,
                                 .beta = Tensor::view_of(beta.data(), Device::CPU, {h}),
                                 .eps = 1e-12f,
                                 .y = Out(Tensor::view_of(y.data(), Device::CPU, {rows, h})),
                                 .mean = Out(cmean),
                                 .rstd = Out(crstd)});
    run_op(cpu, LayerNormBackward{.dy = Tensor::view_of(dy.data(), Device::CPU, {rows, h}),
                                  .x = cx,
                                  .gamma = cgamma,
                                  .mean = cmean,
                                  .rstd = crstd,
                                  .dx = Out(Tensor::view_of(dx.data(), Device::CPU, {rows, h})),
                                  .dgamma = Out(Tensor::view_of(dgamma.data(), Device::CPU, {h})),
                                  .dbeta = Out(Tensor::view_of(dbeta.data(), Device::CPU, {h})),
                                  .workspace = Out(Tensor{})});
    run_op(ctx, LayerNormForward{.x = gx,
                                 .gamma = ggamma,
                                 .beta = gbeta,
                                 .eps = 1e-12f,
                                 .y = Out(gy),
                                 .mean = Out(gmean),
                                 .rstd = Out(grstd)});
    run_op(ctx, LayerNormBackward{.dy = gdy.rows(0, rows),
                                  .x = gx.rows(0, rows),
                                  .gamma = ggamma,
                                  .mean = gmean.rows(0, rows),
                                  .rstd = grstd.rows(0, rows),
                                  .dx = Out(gdx.rows(0, rows)),
                                  .dgamma = Out(gdgamma),
                                  .dbeta = Out(gdbeta),
                                  .workspace = Out(ws)});
    const double errs[] = {test::max_relative_error(test::download_f32(ctx, gy.rows(0, rows)), y),
                           test::max_relative_error(test::download_f32(ctx, gdx.rows(0, rows)), dx),
                           test::max_relative_error(test::download<float>(ctx, gdgamma), dgamma),
                           test::max_relative_error(test::download<float>(ctx, gdbeta), dbeta)};
    for (double err : errs) {
      if (err > 2e-2) {
        std::printf("FAILED validation of %s: relative error %g\n", s.name, err);
        return 1;
      }
    }

    const double fwd_bytes = 2.0 * 2 * n * h + 8.0 * n + 8.0 * h;
    const double bwd_bytes = 3.0 * 2 * n * h + 8.0 * n + 12.0 * h;
    const auto* bx = static_cast<const __nv_bfloat16*>(gx.data);
    const auto* bdy = static_cast<const __nv_bfloat16*>(gdy.data);
    const unsigned row_blocks = static_cast<unsigned>((n + 255) / 256);
    bench::report(ctx, "layernorm_fwd_bf16", s.name, "ours",
                  bench::time_median_ms(ctx,
                                        [&] {
                                          run_op(ctx, LayerNormForward{.x = gx,
                                                                       .gamma = ggamma,
                                                                       .beta = gbeta,
                                                                       .eps = 1e-12f,
                                                                       .y = Out(gy),
                                                                       .mean = Out(gmean),
                                                                       .rstd = Out(grstd)});
                                        }),
                  fwd_bytes, 0);
    bench::report(ctx, "layernorm_fwd_bf16", s.name, "baseline_thread_per_row",
                  bench::time_median_ms(ctx,
                                        [&] {
                                          naive_forward<<<row_blocks, 256, 0, ctx.stream()>>>(
                                              bx, ggamma.ptr<float>(), gbeta.ptr<float>(),
                                              static_cast<__nv_bfloat16*>(gy.data),
                                              gmean.ptr<float>(), grstd.ptr<float>(), n, h);
                                        }),
                  fwd_bytes, 0);
    bench::report(ctx, "layernorm_bwd_bf16", s.name, "ours",
                  bench::time_median_ms(ctx,
                                        [&] {
                                          run_op(ctx, LayerNormBackward{.dy = gdy,
                                                                        .x = gx,
                                                                        .gamma = ggamma,
                                                                        .mean = gmean,
                                                                        .rstd = grstd,
                                                                        .dx = Out(gdx),
                                                                        .dgamma = Out(gdgamma),
                                                                        .dbeta = Out(gdbeta),
                                                                        .workspace = Out(ws)});
                                        }),
                  bwd_bytes, 0);
    bench::report(ctx, "layernorm_bwd_bf16", s.name, "baseline_thread_per_row",
                  bench::time_median_ms(
                      ctx,
                      [&] {
                        naive_backward_dx<<<row_blocks, 256, 0, ctx.stream()>>>(
                            bdy, bx, ggamma.ptr<float>(), gmean.ptr<float>(), grstd.ptr<float>(),
                            static_cast<__nv_bfloat16*>(gdx.data), n, h);
                        naive_backward_params<<<(h + 255) / 256, 256, 0, ctx.stream()>>>(
                            bdy, bx, gmean.ptr<float>(), grstd.ptr<float>(), gdgamma.ptr<float>(),
                            gdbeta.ptr<float>(), n, h);
                      }),
                  bwd_bytes, 0);
  }
  return 0;
}
