// embedding forward and backward (f32 tables, bf16 output) at ELECTRA-Small (B = 128, T = 128,
// E = 128), Base (B = 32, T = 512, E = 768) and Large (E = 1024), V = 30522, Zipf-like ids, and
// Base's 64 x 512 micro-batch with ELECTRA-like ids (a padding run, [MASK] on 15%): the cases of
// test/kernels/embedding_cases.cpp run by bench/op_bench.cuh; forward ours against one thread per
// element; backward ours (deterministic: one-block sort + run sums, 2 launches) against the usual
// float-atomic scatter (not deterministic).
#include <cuda_bf16.h>

#include "kernels/embedding.h"
#include "op_bench.cuh"

using namespace electra;

namespace {

__global__ void naive_forward(const int32_t* ids, const int32_t* sids, const float* word,
                              const float* position, const float* segment, __nv_bfloat16* out,
                              int64_t len, int64_t e, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t token = i / e, j = i % e, t = token % len;
  out[i] = __float2bfloat16_rn(word[ids[token] * e + j] + position[t * e + j] +
                               segment[sids[token] * e + j]);
}

__global__ void atomic_backward(const __nv_bfloat16* dout, const int32_t* ids, const int32_t* sids,
                                float* dword, float* dposition, float* dsegment, int64_t len,
                                int64_t e, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t token = i / e, j = i % e, t = token % len;
  const float d = __bfloat162float(dout[i]);
  atomicAdd(dword + ids[token] * e + j, d);
  atomicAdd(dposition + t * e + j, d);
  atomicAdd(dsegment + sids[token] * e + j, d);
}

}  // namespace

int main() {
  // One thread per element of out [B, T, E].
  auto blocks = [](const test::Args& a) {
    return static_cast<unsigned>((a["out"].numel() + 255) / 256);
  };
  const std::vector<bench::Baseline> baselines = {
      {"embedding", bench::Pass::kForward, "baseline_naive",
       [blocks](Context& ctx, const test::Args& a) {
         const Tensor& out = a["out"];
         naive_forward<<<blocks(a), 256, 0, ctx.stream()>>>(
             a["ids"].ptr<int32_t>(), a["segment_ids"].ptr<int32_t>(), a["word"].ptr<float>(),
             a["position"].ptr<float>(), a["segment"].ptr<float>(),
             static_cast<__nv_bfloat16*>(out.data), out.dim(1), out.dim(2), out.numel());
       }},
      {"embedding", bench::Pass::kBackward, "baseline_atomic",
       [blocks](Context& ctx, const test::Args& a) {
         const Tensor& dout = a["dout"];
         atomic_backward<<<blocks(a), 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(dout.data), a["ids"].ptr<int32_t>(),
             a["segment_ids"].ptr<int32_t>(), a["dword"].ptr<float>(), a["dposition"].ptr<float>(),
             a["dsegment"].ptr<float>(), dout.dim(1), dout.dim(2), dout.numel());
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
