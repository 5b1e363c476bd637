// disc_head over every token of a batch (B x T: Small 128 x 128, Base 256 x 512), bf16 logits: the
// cases of test/kernels/disc_head_cases.cpp run by bench/op_bench.cuh, ours (deterministic
// two-pass counts) against a plain one-thread-per-token kernel that adds the counts with float
// atomics (non-deterministic order).
#include <cuda_bf16.h>

#include "kernels/disc_head.h"
#include "op_bench.cuh"

using namespace electra;

namespace {

__global__ void naive_disc_head(const __nv_bfloat16* logits, const int32_t* labels,
                                const float* weights, float scale, int64_t n, float* loss,
                                __nv_bfloat16* dlogits, float* counts) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float z = __bfloat162float(logits[i]), w = weights[i];
  const bool actual = labels[i] == 1, predicted = z > 0.0f;
  const float y = actual ? 1.0f : 0.0f;
  const float l = w * (fmaxf(z, 0.0f) - y * z + log1pf(expf(-fabsf(z))));
  loss[i] = l;
  dlogits[i] = __float2bfloat16_rn(w * scale * (1.0f / (1.0f + expf(-z)) - y));
  atomicAdd(&counts[kDiscCorrect], predicted == actual ? w : 0.0f);
  atomicAdd(&counts[kDiscTruePositive], predicted && actual ? w : 0.0f);
  atomicAdd(&counts[kDiscPredictedPositive], predicted ? w : 0.0f);
  atomicAdd(&counts[kDiscActualPositive], actual ? w : 0.0f);
  atomicAdd(&counts[kDiscWeight], w);
  atomicAdd(&counts[kDiscLoss], l);
}

}  // namespace

int main() {
  const std::vector<bench::Baseline> baselines = {
      {"disc_head", bench::Pass::kForward, "baseline_atomics",
       [](Context& ctx, const test::Args& a) {
         const int64_t n = a["logits"].numel();
         const Tensor& counts = a["counts"];
         ELECTRA_CUDA_CHECK(cudaMemsetAsync(counts.data, 0, counts.nbytes(), ctx.stream()));
         // The cases' scale: 1 / n.
         naive_disc_head<<<(n + 255) / 256, 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(a["logits"].data), a["labels"].ptr<int32_t>(),
             a["weights"].ptr<float>(), 1.0f / static_cast<float>(n), n, a["loss"].ptr<float>(),
             static_cast<__nv_bfloat16*>(a["dlogits"].data), counts.ptr<float>());
         ELECTRA_CUDA_CHECK_LAUNCH();
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
