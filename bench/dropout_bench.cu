// dropout forward (bf16 activations, p = 0.1) at ELECTRA-Small, Base and Large activation sizes:
// the cases of test/kernels/dropout_cases.cpp run by bench/op_bench.cuh, ours against a
// one-thread-per-element kernel that draws one Philox block per element.
#include <cuda_bf16.h>

#include "kernels/dropout.h"
#include "op_bench.cuh"

using namespace electra;

namespace {

__global__ void naive_dropout(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n,
                              DropoutSite site) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const bool keep = dropout_keep(site.stream, site.offset + i, site.p);
  y[i] = __float2bfloat16_rn(keep ? __bfloat162float(x[i]) / (1.0f - site.p) : 0.0f);
}

}  // namespace

int main() {
  const std::vector<bench::Baseline> baselines = {
      {"dropout", bench::Pass::kForward, "baseline_naive",
       [](Context& ctx, const test::Args& a) {
         const int64_t n = a["x"].numel();
         // The site of test/kernels/dropout_cases.cpp's benchmark cases.
         const DropoutSite site{ctx.rng(RngPurpose::kDropout, 12), dropout_site_offset(2), 0.1f};
         naive_dropout<<<(n + 255) / 256, 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(a["x"].data),
             static_cast<__nv_bfloat16*>(a["y"].data), n, site);
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
