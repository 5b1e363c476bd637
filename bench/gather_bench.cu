// gather of masked positions (bf16, K = 15% of T) at ELECTRA-Small (B = 128, T = 128, H = 256),
// Base (B = 32, T = 512, H = 768) and Large (H = 1024): the cases of
// test/kernels/gather_cases.cpp run by bench/op_bench.cuh; forward ours against one thread per
// element; backward ours (one thread per (slot, column group), deterministic, slot order)
// against a bf16 atomicAdd scatter (not deterministic).
#include <cuda_bf16.h>

#include "kernels/gather.h"
#include "op_bench.cuh"

using namespace electra;

namespace {

__global__ void naive_forward(const __nv_bfloat16* x, const int32_t* pos, __nv_bfloat16* out,
                              int64_t len, int64_t h, int64_t slots, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t slot = i / h, j = i % h, b = slot / slots;
  out[i] = x[(b * len + pos[slot]) * h + j];
}

__global__ void atomic_backward(const __nv_bfloat16* dout, const int32_t* pos, __nv_bfloat16* dx,
                                int64_t len, int64_t h, int64_t slots, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t slot = i / h, j = i % h, b = slot / slots;
  atomicAdd(dx + (b * len + pos[slot]) * h + j, dout[i]);
}

}  // namespace

int main() {
  // One thread per element of out [B * K, H].
  auto blocks = [](const test::Args& a) {
    return static_cast<unsigned>((a["out"].numel() + 255) / 256);
  };
  const std::vector<bench::Baseline> baselines = {
      {"gather", bench::Pass::kForward, "baseline_naive",
       [blocks](Context& ctx, const test::Args& a) {
         const Tensor &x = a["x"], &out = a["out"];
         naive_forward<<<blocks(a), 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(x.data), a["positions"].ptr<int32_t>(),
             static_cast<__nv_bfloat16*>(out.data), x.dim(1), x.dim(2), a["positions"].dim(1),
             out.numel());
       }},
      {"gather", bench::Pass::kBackward, "baseline_atomic",
       [blocks](Context& ctx, const test::Args& a) {
         const Tensor &dx = a["dx"], &dout = a["dout"];
         atomic_backward<<<blocks(a), 256, 0, ctx.stream()>>>(
             static_cast<const __nv_bfloat16*>(dout.data), a["positions"].ptr<int32_t>(),
             static_cast<__nv_bfloat16*>(dx.data), dx.dim(1), dx.dim(2), a["positions"].dim(1),
             dout.numel());
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
