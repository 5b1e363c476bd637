// Device pieces of the bf16 flash kernels that more than one of them uses: the flash kernels of
// kernels/attention_flash_bf16.cu and kFlashShort's forward and one-pass backward
// (kernels/attention_flash_short.cu). Tiles in shared memory, the padding mask of 64 keys, the
// dropout keep bits of a query-major C tile, the store of a warp's accumulator rows, and the
// forward's softmax steps on a warp's S rows (mask and scale with the row max, P and Pd with the
// row sums, then L and out). Which lane holds which element:
// kernels/attention_flash_layout.h.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "kernels/attention_flash_common.cuh"
#include "kernels/attention_flash_mma.cuh"
#include "kernels/dropout_mask.h"

namespace electra::cuda::flash_bf16 {

using bf16 = __nv_bfloat16;

constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kLn2 = 0.69314718055994530942f;

// 2^x by the special function unit, results below 2^-126 flushed to 0 (ex2.approx.ftz.f32; 2^-inf
// = 0): every exponential of the bf16 flash kernels. exp2f is the same instruction (2 ulp) plus,
// for subnormal results, a range test and a rescale around it, whose predicates ptxas carried as
// bits of one register through the backward's keep-bit code (2 instructions more an element, and
// as many again to park and restore them). A probability below 2^-126 is a term far below bf16's
// rounding of the sums it enters.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// base + offset elements, by one 32 x 32 -> 64-bit multiply-add (mad.wide.s32), written out in
// PTX: as C++ the compiler re-associated the head's 64-bit offset from the tensor into every
// address (a sign extension and two 64-bit adds a 16-byte copy).
__device__ __forceinline__ const bf16* element_at(const bf16* base, int offset) {
  const bf16* at;
  asm("mad.wide.s32 %0, %1, 2, %2;" : "=l"(at) : "r"(offset), "l"(base));
  return at;
}

// Rows [row0, row0 + kRows) of one head (d columns from `src`, row stride ld) into `tile`
// [kRows][operand_ld(kD)], zero past T and past d, by a block of exactly kThreads threads: by
// 16-byte cp.async when fp.vec (part of the caller's next commit group), else element by element
// (complete when the caller synchronises). Offsets from `src` are ints: (T + 128) ld < 2^31
// (flash_params checks it), so an address is one 32-bit multiply-add away from `src`.
// The cp.async passes are unrolled at compile time: thread x copies chunk x % kChunks of rows
// x / kChunks + pass kRowsPerPass, so its offset is computed once and each pass adds a constant
// multiple of ld. A loop `for (idx = threadIdx.x; idx < kRows kChunks; idx += kThreads)`
// compiled to a trip-count computation, a 4-way unrolled body with a remainder, and 64-bit index
// products per chunk: about 90 instructions a tile, three tiles (Q, dout, out) each query tile
// of the dK, dV role (sm_90 SASS, docs/KERNELS.md "Tile loads and D"); with 64-bit offsets
// the unrolled passes still took about 18 instructions a chunk.
template <int kRows, int kD, int kThreads = flash_layout::kMmaWarps* kWarpSize>
__device__ __forceinline__ void load_tile(bf16* tile, const bf16* src, int ld, int row0,
                                          const FlashParams& fp) {
  constexpr int kLd = flash_layout::operand_ld(kD);
  if (fp.vec) {
    constexpr int kChunks = kD / 8;
    static_assert(kThreads % kChunks == 0, "a pass covers whole rows");
    constexpr int kRowsPerPass = kThreads / kChunks;
    constexpr int kPasses = (kRows + kRowsPerPass - 1) / kRowsPerPass;
    const int r0 = static_cast<int>(threadIdx.x) / kChunks;
    const int c = static_cast<int>(threadIdx.x) % kChunks * 8;
    const bool column = c < fp.d;
    const int from = (row0 + r0) * ld + c;  // element (row0 + r0, c) of src
    bf16* to = tile + r0 * kLd + c;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int r = r0 + pass * kRowsPerPass;
      if (kRows % kRowsPerPass != 0 && r >= kRows) break;  // the last pass's spare threads
      const bool valid = column && row0 + r < fp.t;
      flash_mma::cp_async16(to + pass * kRowsPerPass * kLd,
                            element_at(src, valid ? from + pass * kRowsPerPass * ld : 0), valid);
    }
  } else {
    for (int idx = threadIdx.x; idx < kRows * kD; idx += kThreads) {
      const int r = idx / kD, c = idx % kD;
      tile[r * kLd + c] =
          row0 + r < fp.t && c < fp.d ? src[(row0 + r) * ld + c] : __float2bfloat16_rn(0.0f);
    }
  }
}

// D_i = <dout_i, out_i> of a warp's 16 rows of two operand tiles in shared memory (rows from
// out_rows and dout_rows, kD columns, zero past d and in rows past T as load_tile leaves them),
// by tensor cores: the diagonal of the 16 x 16 product dout out^T (two C tiles, kD / 16 mma steps
// each; the bf16 products are exact in f32). Row r's D is element diag_c(r).e of C tile r / 8 in
// lane diag_c(r).lane = 4 g + g / 2 (g = r % 8: rows g and g + 8 in one lane,
// flash_layout::diag_c). Returned in every lane: what lane 4 g + g / 2 of its own g = lane / 4
// holds there, D of rows g (.x) and g + 8 (.y) in that lane, other values elsewhere.
// The one D of every bf16 flash backward (both roles of v2's, kFlashShort's), from rows at
// multiples of 16 of tiles of one layout, so that all of them multiply the same bits. Summed by
// FMA, 4 lanes a row (16-byte loads, bf16 to f32 conversions, an FMA chain and 2 shuffles), it
// took about 140 instructions a thread per 64 rows, 15% of the dK, dV role's loop at d = 64
// (sm_90 SASS; docs/KERNELS.md, "Instructions per tile").
template <int kD>
__device__ __forceinline__ float2 warp_diag_d(const bf16* out_rows, const bf16* dout_rows,
                                              int lane) {
  float c[2][4] = {};
  flash_mma::mma_abt_smem<kD, 2 * 8>(c, dout_rows, out_rows, flash_layout::operand_ld(kD), lane);
  // diag_c(g).e = g % 2 in C tile 0, diag_c(g + 8).e = 2 + g % 2 in C tile 1.
  const bool odd = lane / 4 % 2 != 0;
  return {odd ? c[0][1] : c[0][0], odd ? c[1][3] : c[1][2]};
}

// D of this lane's rows g and g + 8 (flash_layout::mma_c) of a warp's 16 rows of the out and
// dout tiles starting at out_rows, dout_rows (warp_diag_d), from the lane holding them.
template <int kD>
__device__ __forceinline__ void warp_rows_d(float (&row_d)[2], const bf16* out_rows,
                                            const bf16* dout_rows, int lane) {
  const float2 d = warp_diag_d<kD>(out_rows, dout_rows, lane);
  const int from = flash_layout::diag_c(lane / 4).lane;
  row_d[0] = __shfl_sync(0xffffffffu, d.x, from);
  row_d[1] = __shfl_sync(0xffffffffu, d.y, from);
}

// Bit c: key j0 + c (c < 64) is real, i.e. inside T and not padding. One ballot per 32 keys.
__device__ __forceinline__ uint64_t real_keys64(const int32_t* real, int j0, int t) {
  const int lane = threadIdx.x % kWarpSize, ja = j0 + lane, jb = ja + kWarpSize;
  const uint32_t lo = __ballot_sync(0xffffffffu, ja < t && real[ja] != 0);
  const uint32_t hi = __ballot_sync(0xffffffffu, jb < t && real[jb] != 0);
  return lo | static_cast<uint64_t>(hi) << 32;
}

// Whether element e of this lane's C tile n (columns = keys) is a real key, from real_keys64's
// word of the tile's 64 keys (n % 8: the C tile within them). The shift by the lane's column is
// the same for every element: the compiler takes it out of an unrolled loop (one 64-bit shift a
// word), leaving a constant bit test an element; written as (keys >> c) & 1 with c = 8 n + the
// element's column it did not (two 64-bit shifts and two tests an element pair).
__device__ __forceinline__ bool key_is_real(uint64_t keys, int lane, int n, int e) {
  return ((keys >> flash_layout::mma_c(lane, 0).col >> (8 * (n % 8) + e % 2)) & 1u) != 0;
}

// The keep bits of this lane's 8 elements of the pair of 16 x 8 C tiles whose element (0, 0) is
// (query i0, key j0) when rows are queries: bit 4 n + e = element e (flash_layout::mma_c) of C
// tile n (n = 0, 1: keys j0 .. j0 + 7, j0 + 8 .. j0 + 15). Each lane draws one group of 8 keys
// (flash_layout::keep_draw; only where the group starts inside T, all set elsewhere: P is 0 or
// never written there) and its quad exchanges them (keep_exchange_step).
__device__ __forceinline__ uint32_t keep_bits_pair(const FlashParams& fp, int bh, int i0, int j0,
                                                   int lane) {
  namespace fl = flash_layout;
  const fl::Coord at = fl::keep_draw(lane);
  const int i = i0 + at.row, j = j0 + at.col;
  uint32_t bits = i < fp.t && j < fp.t
                      ? attention_keep_bits<8>(fp.rng, mask_row(fp, bh, i) + j, fp.keep_threshold)
                      : 0xFFu;
  bits = fl::keep_exchange_step(bits, __shfl_xor_sync(0xffffffffu, bits, 2), lane, 2);
  return fl::keep_exchange_step(bits, __shfl_xor_sync(0xffffffffu, bits, 1), lane, 1);
}

// The transpose of the warp's 32 x 32 bit matrix of one word a lane (flash_layout::
// bit_transpose_step): 5 shuffles.
__device__ __forceinline__ uint32_t transpose_warp_bits(uint32_t x, int lane) {
#pragma unroll
  for (int j = 16; j > 0; j /= 2) {
    x = flash_layout::bit_transpose_step(x, __shfl_xor_sync(0xffffffffu, x, j), lane, j);
  }
  return x;
}

// The saved keep bits (flash_layout::keep_tile_word) of a query-major warp tile, queries i0 ..
// i0 + 15 by keys j0 .. j0 + 63 (i0 % 16 == 0, j0 % 8 == 0), as each lane's 32 bits (bit 4 n + e:
// element e of C tile n), one saved word a lane (flash_layout::keep_word_rows) and a bit
// transpose between the two:
//   add_keep_bits: the forward's bits of the C tiles 2 m, 2 m + 1 (keep: this lane's, as
//     keep_bits_pair gives them) into `bits` (elements outside T as drawn or not: unspecified,
//     never read back);
//   store_keep_bits: then `bits` transposed into head bh's words, where that C tile's keys start
//     inside T (i0 < T: a warp past T stores nothing); by the whole warp;
//   load_keep_bits: the backward's load of the same words, transposed back (all set where nothing
//     was stored: P is 0 there); by the whole warp.
// One 128-byte access a warp per 64 keys, one register a lane, and 5 shuffles: 16-byte accesses of
// a C tile's four words were loaded ahead by ptxas, 4 registers a C tile, and spilled; so did the
// forward at 3 blocks per SM when it zeroed the bits outside T.
__device__ __forceinline__ void add_keep_bits(uint32_t& bits, int m, uint32_t keep) {
  bits |= (keep & 0xFFu) << (8 * m);
}
__device__ __forceinline__ void store_keep_bits(uint32_t bits, const FlashParams& fp, int bh,
                                                int i0, int j0, int lane) {
  const uint32_t word = transpose_warp_bits(bits, lane);
  if (i0 < fp.t && j0 + 8 * (lane / 4) < fp.t) {
    *keep_word(fp, bh, flash_layout::keep_word_rows(fp.t, i0, j0, lane)) = word;
  }
}
__device__ __forceinline__ uint32_t load_keep_bits(const FlashParams& fp, int bh, int i0, int j0,
                                                   int lane) {
  const uint32_t word =
      i0 < fp.t && j0 + 8 * (lane / 4) < fp.t
          ? __ldg(keep_word(fp, bh, flash_layout::keep_word_rows(fp.t, i0, j0, lane)))
          : ~0u;
  return transpose_warp_bits(word, lane);
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

// The forward's S of a warp's 16 query rows by the 8 kTiles keys of its C tiles (flash_layout::
// mma_c) in log2 units: S log2(e) / sqrt(d) (scale_log2) where key c of the tiles is real (bit
// c % 64 of keys[c / 64], real_keys64), -inf elsewhere. row_max: the max of rows g and g + 8 over
// those keys, the same in the row's 4 lanes (shuffles xor 1, then xor 2); -inf where none is real.
template <int kTiles>
__device__ __forceinline__ void mask_scale_rows(float (&s)[kTiles][4],
                                                const uint64_t (&keys)[kTiles / 8],
                                                float scale_log2, int lane, float (&row_max)[2]) {
  static_assert(kTiles % 8 == 0, "64 keys a mask word");
  row_max[0] = row_max[1] = -INFINITY;
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[n][e] = key_is_real(keys[n / 8], lane, n, e) ? s[n][e] * scale_log2 : -INFINITY;
      row_max[e / 2] = fmaxf(row_max[e / 2], s[n][e]);
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {  // the 4 lanes of a row are lanes 4 g .. 4 g + 3
    row_max[r] = fmaxf(row_max[r], __shfl_xor_sync(0xffffffffu, row_max[r], 1));
    row_max[r] = fmaxf(row_max[r], __shfl_xor_sync(0xffffffffu, row_max[r], 2));
  }
}

// P = exp2(S - offset) of each element of a warp's 16 x 8 kTiles S (log2 units, mask_scale_rows;
// offset per row, 0 in a row without a real key so that its -inf gives 0), added in (n, e) order
// into l, this lane's share of the row sums (its 2 keys of every 8), then Pd = P keep / (1 - p)
// in place; keep: this lane's keep bits, bit 4 (n % 8) + e of keep[n / 8] for element e of C tile
// n (as add_keep_bits collects them; all set at p = 0).
template <int kTiles>
__device__ __forceinline__ void exp_dropout_rows(float (&s)[kTiles][4], const float (&offset)[2],
                                                 float (&l)[2], const FlashParams& fp,
                                                 const uint32_t (&keep_words)[kTiles / 8]) {
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
    const uint32_t keep = keep_words[n / 8] >> (4 * (n % 8));
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float prob = fast_exp2(s[n][e] - offset[e / 2]);
      l[e / 2] += prob;
      s[n][e] = ((keep >> e) & 1u) != 0 ? prob * fp.keep_scale : 0.0f;  // Pd
    }
  }
}

// The forward's row sums of a warp's 16 query rows, once l holds every key's share: the 4 lanes
// of a row add their shares (xor 1, then xor 2), so that every lane holds its rows' sums.
__device__ __forceinline__ void add_row_shares(float (&l)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
}

// The forward's output rows: out = O / l (l: the row sums of add_row_shares; 0 in a row without a
// real key, l = 0) into the head's rows row0 .. of `out_head` (row stride fp.h). Nothing past T.
template <int kD>
__device__ __forceinline__ void store_out_rows(bf16* out_head, float (&o)[kD / 8][4],
                                               const float (&l)[2], int row0, int lane,
                                               const FlashParams& fp) {
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float sum = l[e / 2];
      o[n][e] = sum > 0.0f ? o[n][e] / sum : 0.0f;
    }
  }
  store_rows<kD>(out_head, fp.h, o, 1.0f, row0, lane, fp);
}

// The forward's L of a warp's 16 query rows from row0: lanes 4 g write L = m ln 2 + log l (m: the
// row max in log2 units, l: the row sum of add_row_shares; +inf where l = 0, a row without a real
// key) into `lse_head` ([T] of the head). Nothing past T.
__device__ __forceinline__ void store_row_lse(float* lse_head, const float (&m)[2],
                                              const float (&l)[2], int row0, int lane,
                                              const FlashParams& fp) {
  if (lane % 4 == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + flash_layout::mma_c(lane, 2 * r).row;
      if (i < fp.t) lse_head[i] = l[r] > 0.0f ? m[r] * kLn2 + logf(l[r]) : INFINITY;
    }
  }
}

}  // namespace electra::cuda::flash_bf16
