// The optimizer step over ELECTRA-Small (~14M) and Base (~110M) parameter buffers laid out like
// BERT (per layer: four H x H matrices, two H x 4H, biases and LayerNorm vectors): the cases of
// test/kernels/weight_update_cases.cpp run by bench/op_bench.cuh, grad_norm, AdamW and LAMB (ours:
// segment table, device hyper-parameters), AdamW beside a plain kernel with one thread per element,
// host-side hyper-parameters and no segments (baseline_naive), and beside the scalar AdamW kernel
// that the 16-byte one replaced (baseline_scalar_chunks), so that one run on one card times the
// change.
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

// kernels/weight_update.cu's AdamW kernel as it was before 16-byte vectors (2026-11-27, 73fd62e
// in bench/RESULTS.md): one block of 256 threads per chunk of the segment table, one element a
// thread at a time, scalar loads.
__global__ void __launch_bounds__(256)
    scalar_chunks_adamw(float* params, const float* grads, float* m, float* v,
                        const int32_t* segments, const float* lr_mult, const int32_t* blocks,
                        const float* hyper, const float* norm, bool bias_correction) {
  const int32_t segment = blocks[2 * blockIdx.x], start = blocks[2 * blockIdx.x + 1];
  const int32_t* f = segments + segment * kSegFields;
  const int64_t offset = f[kSegOffset], chunk_end = int64_t{start} + kOptimChunk;
  const int64_t begin = offset + start;
  const int64_t end = offset + (chunk_end < f[kSegSize] ? chunk_end : f[kSegSize]);
  const bool decay = f[kSegDecay] != 0;
  const AdamCoeffs k = adam_coeffs(hyper, norm[0], bias_correction);
  if (k.skip || lr_mult[segment] == 0.0f) return;
  const float step = k.lr * lr_mult[segment];
  for (int64_t i = begin + threadIdx.x; i < end; i += 256) {
    float mi = m[i], vi = v[i];
    const float p = params[i];
    const float update = adam_update(k, p, grads[i], mi, vi, decay);
    m[i] = mi;
    v[i] = vi;
    params[i] = p - step * update;
  }
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
      {"adamw", bench::Pass::kForward, "baseline_scalar_chunks",
       [](Context& ctx, const test::Args& a) {
         const int64_t blocks = a["blocks"].dim(0);
         if (blocks == 0) return;
         scalar_chunks_adamw<<<blocks, 256, 0, ctx.stream()>>>(
             a["params"].ptr<float>(), a["grads1"].ptr<float>(), a["m"].ptr<float>(),
             a["v"].ptr<float>(), a["segments"].ptr<int32_t>(), a["lr_mult"].ptr<float>(),
             a["blocks"].ptr<int32_t>(), a["hyper1"].ptr<float>(), a["norm"].ptr<float>(),
             /*bias_correction=*/false);  // the benchmark's AdamW: official ELECTRA, no correction
         ELECTRA_CUDA_CHECK_LAUNCH();
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
