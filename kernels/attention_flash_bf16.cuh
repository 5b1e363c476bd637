// Device pieces of the bf16 flash kernels that more than one of them uses: the flash kernels of
// kernels/attention_flash_bf16.cu and kFlashShort's one-pass backward
// (kernels/attention_flash_short.cu). Tiles in shared memory, the padding mask of 64 keys, the
// dropout keep bits of a query-major C tile and the store of a warp's accumulator rows. Which lane
// holds which element: kernels/attention_flash_layout.h.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/attention_flash_common.cuh"
#include "kernels/attention_flash_mma.cuh"
#include "kernels/dropout_mask.h"

namespace electra::cuda::flash_bf16 {

using bf16 = __nv_bfloat16;

constexpr float kLog2e = 1.44269504088896340736f;

// Rows [row0, row0 + kRows) of one head (d columns from `src`, row stride ld) into `tile`
// [kRows][operand_ld(kD)], zero past T and past d, by a block of kThreads threads: by 16-byte
// cp.async when fp.vec (part of the caller's next commit group), else element by element
// (complete when the caller synchronises).
template <int kRows, int kD, int kThreads = flash_layout::kMmaWarps* kWarpSize>
__device__ void load_tile(bf16* tile, const bf16* src, int64_t ld, int row0,
                          const FlashParams& fp) {
  constexpr int kLd = flash_layout::operand_ld(kD);
  if (fp.vec) {
    constexpr int kChunks = kD / 8;
    for (int idx = threadIdx.x; idx < kRows * kChunks; idx += kThreads) {
      const int r = idx / kChunks, c = idx % kChunks * 8;
      const bool valid = row0 + r < fp.t && c < fp.d;
      flash_mma::cp_async16(tile + r * kLd + c, valid ? src + (row0 + r) * ld + c : src, valid);
    }
  } else {
    for (int idx = threadIdx.x; idx < kRows * kD; idx += kThreads) {
      const int r = idx / kD, c = idx % kD;
      tile[r * kLd + c] =
          row0 + r < fp.t && c < fp.d ? src[(row0 + r) * ld + c] : __float2bfloat16_rn(0.0f);
    }
  }
}

// Bit c: key j0 + c (c < 64) is real, i.e. inside T and not padding. One ballot per 32 keys.
__device__ __forceinline__ uint64_t real_keys64(const int32_t* real, int j0, int t) {
  const int lane = threadIdx.x % kWarpSize, ja = j0 + lane, jb = ja + kWarpSize;
  const uint32_t lo = __ballot_sync(0xffffffffu, ja < t && real[ja] != 0);
  const uint32_t hi = __ballot_sync(0xffffffffu, jb < t && real[jb] != 0);
  return lo | static_cast<uint64_t>(hi) << 32;
}

// The keep bits of this lane's 4 elements (bit e = element e, flash_layout::mma_c) of the 16 x 8
// tile whose element (0, 0) is (query i0, key j0) when rows are queries; draws only where the
// group starts inside T (bits 0xF elsewhere: P is 0 or never written there).
__device__ __forceinline__ uint32_t keep_bits_rows(const FlashParams& fp, int bh, int i0, int j0,
                                                   int lane) {
  namespace fl = flash_layout;
  const fl::Coord at = fl::keep_draw(lane);
  const int i = i0 + at.row, j = j0 + at.col;
  const uint32_t mine =
      i < fp.t && j < fp.t ? dropout_keep4(fp.rng, mask_row(fp, bh, i) + j, fp.p) : 0xFu;
  // Elements 0, 1 come from one lane and 2, 3 from another (the layout test checks it).
  const uint32_t lo = __shfl_sync(0xffffffffu, mine, fl::keep_source(lane, 0).lane);
  const uint32_t hi = __shfl_sync(0xffffffffu, mine, fl::keep_source(lane, 2).lane);
  uint32_t bits = 0;
#pragma unroll
  for (int e = 0; e < 4; ++e)
    bits |= (((e < 2 ? lo : hi) >> fl::keep_source(lane, e).bit) & 1u) << e;
  return bits;
}

// Writes the warp's 16 x kD accumulator times `scale` into rows row0 + r (r < 16, row0 + r < T),
// columns 0 .. d - 1 of `dst` (row stride ld): bf16 pairs when fp.vec (d even, 4-byte aligned).
template <int kD>
__device__ void store_rows(bf16* dst, int64_t ld, const float (&acc)[kD / 8][4], float scale,
                           int row0, int lane, const FlashParams& fp) {
  namespace fl = flash_layout;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int i = row0 + fl::mma_c(lane, 2 * half).row;
    if (i >= fp.t) continue;
    bf16* row = dst + i * ld;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      const int c = 8 * n + fl::mma_c(lane, 2 * half).col;
      const float x0 = acc[n][2 * half] * scale, x1 = acc[n][2 * half + 1] * scale;
      if (fp.vec) {
        if (c < fp.d) *reinterpret_cast<__nv_bfloat162*>(row + c) = __floats2bfloat162_rn(x0, x1);
      } else {
        if (c < fp.d) row[c] = __float2bfloat16_rn(x0);
        if (c + 1 < fp.d) row[c + 1] = __float2bfloat16_rn(x1);
      }
    }
  }
}

}  // namespace electra::cuda::flash_bf16
