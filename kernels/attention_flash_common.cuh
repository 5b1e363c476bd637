// What the f32 flash kernels (kernels/attention_flash.cu) and the bf16 ones
// (kernels/attention_flash_bf16.cu) share: their parameters, the dropout mask's element index,
// the launch and its grids, and the bf16 entry points that attention_flash.cu calls; and the f32
// kernels' D_i = <dout_i, out_i> (the bf16 ones by tensor cores: warp_diag_d).
#pragma once

#include <type_traits>

#include "engine/philox.h"
#include "kernels/attention_flash.h"
#include "kernels/attention_flash_layout.h"
#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"

namespace electra::cuda {

struct FlashParams {
  int t, h, heads, d;  // sequence length, hidden, heads, head dim
  float scale;         // 1 / sqrt(d)
  float p, keep_scale;
  uint32_t keep_threshold;  // attention_keep_threshold(p) (kernels/dropout_mask.h)
  RngStream rng;
  uint64_t site;  // dropout_site_offset(args.site)
  bool vec;       // tiles may be loaded as 16-byte packs (d % 8 == 0, pointers aligned)
  // The saved keep bits of every head (attention.h's `keep`; flash_layout::keep_tile_word): the
  // bf16 forward writes them at p > 0, the bf16 backward reads them. Null for the f32 kernels,
  // which draw the bits in both directions.
  uint32_t* keep;
};

// `keep`: the call's keep bits (unset for the f32 kernels), required by the bf16 ones.
FlashParams flash_params(const Tensor& qkv, const AttentionArgs& args, const Tensor& keep,
                         std::initializer_list<const void*> loaded);

// Saved keep word `in_head` (flash_layout::keep_tile_word) of head bh. The index is computed in
// 32 bits (B heads <= 65535 and at most 4 x 32 x 64 words a head at T = 512: below 2^31), so that
// a kernel keeps one register for the head's base, not a 64-bit pointer (which ptxas spilled).
__device__ __forceinline__ uint32_t* keep_word(const FlashParams& fp, int bh, int64_t in_head) {
  return fp.keep + (bh * static_cast<int>(flash_layout::keep_words_per_head(fp.t)) +
                    static_cast<int>(in_head));
}

// Index of element (i, 0) of the dropout mask of head bh (attention_mask_index: rows
// round_up(T, 8) apart, so that a group of 8 keys starting at a multiple of 8 is one Philox block).
__device__ __forceinline__ uint64_t mask_row(const FlashParams& fp, int bh, int i) {
  return attention_mask_index(fp.site, bh, fp.t, i, 0);
}

// D_i = <dout_i, out_i> over the first d columns of the rows `out` and `dout` in global memory,
// summed by one warp (lane c takes columns c, c + 32, ..., one FMA each; then
// warp_sum): every lane returns it. Both roles of the f32 flash backward compute D with it, so
// they agree bit for bit (the bf16 kernels sum D by tensor cores: warp_diag_d,
// kernels/attention_flash_bf16.cuh).
template <class T>
__device__ __forceinline__ float flash_dot_row(const T* out, const T* dout, int d) {
  float sum = 0.0f;
  for (int c = threadIdx.x % kWarpSize; c < d; c += kWarpSize) {
    sum = fmaf(to_float(out[c]), to_float(dout[c]), sum);
  }
  return warp_sum(sum);
}

// D_i of row i of head (b, head), from the [B, T, H] tensors in global memory.
template <class T>
__device__ __forceinline__ float flash_row_d(const T* out, const T* dout, int b, int head, int i,
                                             const FlashParams& fp) {
  const int64_t offset = (static_cast<int64_t>(b) * fp.t + i) * fp.h + head * fp.d;
  return flash_dot_row(out + offset, dout + offset, fp.d);
}

// Launches `kernel` with `threads` threads on `grid` with `bytes` of dynamic shared memory, after
// raising the kernel's limit above the default 48 KiB.
template <class... KernelArgs, class... Args>
void flash_launch(Context& ctx, void (*kernel)(KernelArgs...), int threads, dim3 grid, size_t bytes,
                  Args&&... args) {
  ELECTRA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  kernel<<<grid, threads, bytes, ctx.stream()>>>(std::forward<Args>(args)...);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

// The forward's grid: (query tiles, B * heads).
inline dim3 flash_forward_grid(const FlashParams& fp, int64_t heads_total, DType dtype) {
  return dim3(static_cast<unsigned>(
                  ceil_div(fp.t, flash_tiles(FlashBlock::kForward, dtype, fp.d).block_rows)),
              static_cast<unsigned>(heads_total));
}

// The backward's grid: (B * heads, key tiles + query tiles). blockIdx.y < kv_tiles: the dK, dV
// block of key tile blockIdx.y; else the dQ block of query tile blockIdx.y - kv_tiles. GPUs
// dispatch blocks in the order of x + y * gridDim.x in practice (CUDA does not promise it, and only
// the speed depends on it), so the dK, dV blocks (the heavier role: four products per pair of
// tiles against three) start before the dQ blocks, and the lighter ones fill the grid's tail.
// kFlashDsGemm's backward (FlashLaunch::kBackwardDkDv) has no query tiles: dK, dV blocks only.
struct FlashBackwardGrid {
  int kv_tiles, q_tiles;
};
inline FlashBackwardGrid flash_backward_tiles(const FlashParams& fp, DType dtype,
                                              FlashLaunch launch) {
  const int q_tiles =
      launch == FlashLaunch::kBackwardDkDv
          ? 0
          : static_cast<int>(
                ceil_div(fp.t, flash_tiles(FlashBlock::kBackwardDq, dtype, fp.d).block_rows));
  return {static_cast<int>(
              ceil_div(fp.t, flash_tiles(FlashBlock::kBackwardDkDv, dtype, fp.d).block_rows)),
          q_tiles};
}
// Calls f(width, store_ds) with the backward kernel's template arguments as integral constants:
// the tile width of head dim d (with_tile_width) and whether the launch stores dS (kFlashDsGemm).
template <class F>
void with_backward_kernel(int64_t d, bool store_ds, F&& f) {
  with_tile_width(d, [&](auto width) {
    if (store_ds) {
      f(width, std::true_type{});
    } else {
      f(width, std::false_type{});
    }
  });
}
inline dim3 flash_backward_grid(const FlashBackwardGrid& tiles, int64_t heads_total) {
  return dim3(static_cast<unsigned>(heads_total),
              static_cast<unsigned>(tiles.kv_tiles + tiles.q_tiles));
}
// This block's place in that grid: its role, head b * heads + h and tile of the role.
struct FlashBackwardBlock {
  bool dkdv;
  int bh, tile;
};
__device__ __forceinline__ FlashBackwardBlock flash_backward_block(int kv_tiles) {
  const int y = static_cast<int>(blockIdx.y);
  return {y < kv_tiles, static_cast<int>(blockIdx.x), y < kv_tiles ? y : y - kv_tiles};
}

// The bf16 kernels (kernels/attention_flash_bf16.cu), same tensors as flash_attention_forward
// and flash_attention_backward (ds null, or kFlashDsGemm's dS).
void flash_forward_bf16(Context& ctx, const FlashParams& fp, const Tensor& qkv, const Tensor& mask,
                        const Tensor& lse, const Tensor& out);
void flash_backward_bf16(Context& ctx, const FlashParams& fp, const Tensor& qkv, const Tensor& mask,
                         const Tensor& lse, const Tensor& out, const Tensor& dout,
                         const Tensor& dqkv, const Tensor* ds);

}  // namespace electra::cuda
