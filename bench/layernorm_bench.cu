// layernorm forward and backward and the fused residual layernorm (bf16 activations, f32
// parameters and statistics) at ELECTRA-Small, Base and Large activation sizes: the cases of
// test/kernels/layernorm_cases.cpp run by bench/op_bench.cuh, ours against one thread per row
// (forward, backward dx) plus one thread per column for dgamma/dbeta.
#include <cuda_bf16.h>

#include "kernels/layernorm.h"
#include "op_bench.cuh"

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

}  // namespace

int main() {
  auto rows = [](const test::Args& a) {
    return static_cast<unsigned>((a["x"].dim(0) + 255) / 256);
  };
  const std::vector<bench::Baseline> baselines = {
      {"layernorm", bench::Pass::kForward, "baseline_thread_per_row",
       [rows](Context& ctx, const test::Args& a) {
         naive_forward<<<rows(a), 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(a["x"].data), a["gamma"].ptr<float>(),
             a["beta"].ptr<float>(), static_cast<__nv_bfloat16*>(a["y"].data),
             a["mean"].ptr<float>(), a["rstd"].ptr<float>(), a["x"].dim(0), a["x"].dim(1));
       }},
      {"layernorm", bench::Pass::kBackward, "baseline_thread_per_row",
       [rows](Context& ctx, const test::Args& a) {
         const int64_t n = a["x"].dim(0), h = a["x"].dim(1);
         const auto* x = static_cast<const __nv_bfloat16*>(a["x"].data);
         const auto* dy = static_cast<const __nv_bfloat16*>(a["dy"].data);
         naive_backward_dx<<<rows(a), 256, 0, ctx.stream()>>>(
             dy, x, a["gamma"].ptr<float>(), a["mean"].ptr<float>(), a["rstd"].ptr<float>(),
             static_cast<__nv_bfloat16*>(a["dx"].data), n, h);
         naive_backward_params<<<(h + 255) / 256, 256, 0, ctx.stream()>>>(
             dy, x, a["mean"].ptr<float>(), a["rstd"].ptr<float>(), a["dgamma"].ptr<float>(),
             a["dbeta"].ptr<float>(), n, h);
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
