// The embedding block (f32 tables, bf16 activations) at ELECTRA-Small (B = 128, T = 128, E = 128),
// Base (B = 32, T = 512, E = 768) and Large (E = 1024), V = 30522, Zipf-like ids, and Base's
// 64 x 512 micro-batch with ELECTRA-like ids (a padding run, [MASK] on 15%): the cases of
// test/kernels/embedding_cases.cpp run by bench/op_bench.cuh. Forward ours (lookup + LayerNorm +
// dropout and the backward's sort, 1 launch) against the unfused sequence: one thread per element
// of the sum, then layernorm_forward, then dropout (3 launches). Backward ours (the LayerNorm
// backward with its dropout, then the run sums on the forward's keys: 2 launches) against the same
// LayerNorm backward and the usual float-atomic scatter (not deterministic).
#include <cuda_bf16.h>

#include "kernels/embedding.h"
#include "kernels/layernorm.h"
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

// The case's dropout site (embedding_cases.cpp: its seed's context, site 3 + 1, p = 0.1).
DropoutSite site_of(const Context& ctx) {
  return DropoutSite{ctx.rng(RngPurpose::kDropout, 5), dropout_site_offset(3) + 1, 0.1f};
}

}  // namespace

int main() {
  // One thread per element of sum [B, T, E].
  auto blocks = [](const test::Args& a) {
    return static_cast<unsigned>((a["sum"].numel() + 255) / 256);
  };
  const std::vector<bench::Baseline> baselines = {
      {"embedding", bench::Pass::kForward, "baseline_unfused",
       [blocks](Context& ctx, const test::Args& a) {
         const Tensor& sum = a["sum"];
         const int64_t e = sum.dim(2), rows = sum.numel() / e;
         naive_forward<<<blocks(a), 256, 0, ctx.stream()>>>(
             a["ids"].ptr<int32_t>(), a["segment_ids"].ptr<int32_t>(), a["word"].ptr<float>(),
             a["position"].ptr<float>(), a["segment"].ptr<float>(),
             static_cast<__nv_bfloat16*>(sum.data), sum.dim(1), e, sum.numel());
         run_op(ctx, LayerNormForward{.x = sum.reshape({rows, e}),
                                      .gamma = a["gamma"],
                                      .beta = a["beta"],
                                      .eps = 1e-12f,
                                      .y = Out(a["y"].reshape({rows, e})),
                                      .mean = Out(a["mean"].reshape({rows})),
                                      .rstd = Out(a["rstd"].reshape({rows}))});
         run_op(ctx, Dropout{.x = a["y"], .site = site_of(ctx), .y = Out(a["y"])});
       }},
      {"embedding", bench::Pass::kBackward, "baseline_atomic",
       [blocks](Context& ctx, const test::Args& a) {
         const Tensor& dsum = a["dsum"];
         const int64_t e = dsum.dim(2), rows = dsum.numel() / e;
         run_op(ctx, LayerNormBackward{.dy = a["dy"].reshape({rows, e}),
                                       .x = a["sum"].reshape({rows, e}),
                                       .gamma = a["gamma"],
                                       .mean = a["mean"].reshape({rows}),
                                       .rstd = a["rstd"].reshape({rows}),
                                       .dy_dropout = site_of(ctx),
                                       .dx = Out(dsum.reshape({rows, e})),
                                       .dgamma = Out(a["dgamma"]),
                                       .dbeta = Out(a["dbeta"]),
                                       .workspace = Out(a["norm_workspace"])});
         atomic_backward<<<blocks(a), 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(dsum.data), a["ids"].ptr<int32_t>(),
             a["segment_ids"].ptr<int32_t>(), a["dword"].ptr<float>(), a["dposition"].ptr<float>(),
             a["dsegment"].ptr<float>(), dsum.dim(1), e, dsum.numel());
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
