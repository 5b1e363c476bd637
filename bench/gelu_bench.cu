// bias + GELU forward and backward (bf16 activations, f32 bias) on the FFN intermediate of
// ELECTRA-Small (N = 128 * 128, 4H = 1024), Base (N = 32 * 512, 3072) and Large (4096): the cases
// of test/kernels/gelu_cases.cpp run by bench/op_bench.cuh, ours against one thread per element
// (forward; backward dx) plus one thread per column summing db.
#include <cuda_bf16.h>

#include "kernels/gelu.h"
#include "op_bench.cuh"

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

}  // namespace

int main() {
  auto blocks = [](const test::Args& a) {
    return static_cast<unsigned>((a["x"].numel() + 255) / 256);
  };
  const std::vector<bench::Baseline> baselines = {
      {"bias_gelu", bench::Pass::kForward, "baseline_naive",
       [blocks](Context& ctx, const test::Args& a) {
         naive_forward<<<blocks(a), 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(a["x"].data), a["b"].ptr<float>(),
             static_cast<__nv_bfloat16*>(a["y"].data), a["x"].dim(0), a["x"].dim(1));
       }},
      {"bias_gelu", bench::Pass::kBackward, "baseline_naive",
       [blocks](Context& ctx, const test::Args& a) {
         const int64_t n = a["x"].dim(0), h = a["x"].dim(1);
         auto* dx = static_cast<__nv_bfloat16*>(a["dx"].data);
         naive_backward_dx<<<blocks(a), 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(a["dy"].data),
             static_cast<const __nv_bfloat16*>(a["x"].data), a["b"].ptr<float>(), dx, n, h);
         naive_backward_db<<<(h + 255) / 256, 256, 0, ctx.stream()>>>(dx, a["db"].ptr<float>(), n,
                                                                      h);
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
