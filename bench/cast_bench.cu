// cast f32 -> bf16 at the size of ELECTRA-Base's parameter buffer (~110M values): the case of
// test/kernels/cast_cases.cpp run by bench/op_bench.cuh, ours against a plain
// one-element-per-thread kernel as the baseline.
#include <cuda_bf16.h>

#include "kernels/cast.h"
#include "op_bench.cuh"

using namespace electra;

namespace {
__global__ void naive_cast(const float* in, __nv_bfloat16* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}
}  // namespace

int main() {
  const std::vector<bench::Baseline> baselines = {
      {"cast_f32_bf16", bench::Pass::kForward, "baseline_naive",
       [](Context& ctx, const test::Args& a) {
         const int64_t n = a["in"].numel();
         naive_cast<<<(n + 255) / 256, 256, 0, ctx.stream()>>>(
             a["in"].ptr<float>(), static_cast<__nv_bfloat16*>(a["out"].data), n);
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
