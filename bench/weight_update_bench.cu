// The optimizer step over ELECTRA-Small (~14M) and Base (~110M) parameter buffers laid out like
// BERT (per layer: four H x H matrices, two H x 4H, biases and LayerNorm vectors): the cases of
// test/kernels/weight_update_cases.cpp run by bench/op_bench.cuh, grad_norm, AdamW and LAMB (ours:
// segment table, device hyper-parameters), AdamW beside a plain kernel with one thread per element,
// host-side hyper-parameters and no segments.
#include "kernels/weight_update.h"
#include "op_bench.cuh"

using namespace electra;

namespace {

__global__ void naive_adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr,
                            float b1, float b2, float eps, float wd) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  m[i] = b1 * m[i] + (1.0f - b1) * g[i];
  v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
  p[i] -= lr * (m[i] / (sqrtf(v[i]) + eps) + wd * p[i]);
}

}  // namespace

int main() {
  const std::vector<bench::Baseline> baselines = {
      {"adamw", bench::Pass::kForward, "baseline_naive",
       [](Context& ctx, const test::Args& a) {
         const int64_t n = a["params"].numel();
         OptimHyperValues h;
         h.lr = 1e-2f;  // the cases' one step: gradients grads1, lr 1e-2
         naive_adamw<<<(n + 255) / 256, 256, 0, ctx.stream()>>>(
             a["params"].ptr<float>(), a["grads1"].ptr<float>(), a["m"].ptr<float>(),
             a["v"].ptr<float>(), n, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay);
         ELECTRA_CUDA_CHECK_LAUNCH();
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
