// What the f32 flash kernels (kernels/attention_flash.cu) and the bf16 ones
// (kernels/attention_flash_bf16.cu) share: their parameters, the dropout mask's element index,
// D_i = <dout_i, out_i>, the launch, and the bf16 entry points that attention_flash.cu calls.
#pragma once

#include <type_traits>

#include "engine/philox.h"
#include "kernels/attention_flash.h"
#include "kernels/attention_flash_layout.h"
#include "kernels/cuda_common.cuh"

namespace electra::cuda {

struct FlashParams {
  int t, h, heads, d;  // sequence length, hidden, heads, head dim
  float scale;         // 1 / sqrt(d)
  float p, keep_scale;
  RngStream rng;
  uint64_t site;  // dropout_site_offset(args.site)
  bool vec;       // tiles may be loaded as 16-byte packs (d % 8 == 0, pointers aligned)
};

FlashParams flash_params(const Tensor& qkv, const AttentionArgs& args,
                         std::initializer_list<const void*> loaded);

// Index of element (i, 0) of the dropout mask of head bh: site + (bh * T + i) * T.
__device__ __forceinline__ uint64_t mask_row(const FlashParams& fp, int bh, int i) {
  return fp.site + (static_cast<uint64_t>(bh) * fp.t + i) * fp.t;
}

// D_i = <dout_i, out_i> over the d columns of row i of head (b, head), summed by one warp (lane
// c takes columns c, c + 32, ...; then warp_sum): every lane returns it.
template <class T>
__device__ __forceinline__ float flash_row_d(const T* out, const T* dout, int b, int head, int i,
                                             const FlashParams& fp) {
  const int64_t offset = (static_cast<int64_t>(b) * fp.t + i) * fp.h + head * fp.d;
  float sum = 0.0f;
  for (int c = threadIdx.x % kWarpSize; c < fp.d; c += kWarpSize) {
    sum += to_float(out[offset + c]) * to_float(dout[offset + c]);
  }
  return warp_sum(sum);
}

// Launches `kernel` with `threads` threads on grid (tiles, B * heads) with `bytes` of dynamic
// shared memory, after raising the kernel's limit above the default 48 KiB.
template <class... KernelArgs, class... Args>
void flash_launch(Context& ctx, void (*kernel)(KernelArgs...), int threads, int64_t tiles,
                  int64_t heads_total, size_t bytes, Args&&... args) {
  ELECTRA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(heads_total)), threads, bytes,
           ctx.stream()>>>(std::forward<Args>(args)...);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

// The bf16 kernels (kernels/attention_flash_bf16.cu), same tensors as flash_attention_forward
// and flash_attention_backward.
void flash_forward_bf16(Context& ctx, const FlashParams& fp, const Tensor& qkv, const Tensor& mask,
                        const Tensor& lse, const Tensor& out);
void flash_backward_bf16(Context& ctx, const FlashParams& fp, const Tensor& qkv, const Tensor& mask,
                         const Tensor& lse, const Tensor& out, const Tensor& dout, const Tensor& d,
                         const Tensor& dqkv);

}  // namespace electra::cuda
