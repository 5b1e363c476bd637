// attention on the GPU, flash kernels for bf16 activations (FlashAttention-2, Dao 2023): every
// accumulator in registers, tensor-core products by mma.sync m16n8k16 (bf16 operands, f32
// accumulation), operand tiles in shared memory loaded by cp.async one tile ahead. Blocks of 4
// warps; each warp owns 16 rows of the block's output tile and all its columns. Which lane holds
// which element, and the shared memory of each kernel: kernels/attention_flash_layout.h. Math and
// contract: kernels/attention.h; the online softmax as in kernels/attention_flash.cu.
//
// Forward, one block per (64 queries, b * heads + h), looping over 64-key tiles: S = Q K^T in
// registers, masked and scaled to log2 units (S log2(e) / sqrt(d), so exp is one ex2: fast_exp2),
// the running max m and this lane's share of the sum l updated per row, P = exp2(S - m) and its
// dropout applied in registers, converted to bf16 A fragments and multiplied into O += Pd V.
// At the end the 4 lanes of a row add their sums (fixed order), out = O / l, L = m ln 2 + log l.
//
// Backward, one kernel whose grid holds two roles (flash_backward_grid), no atomics and no block
// waiting on another (two runs give the same bits):
//   dK, dV role, one block per (64 keys, b * heads + h), dispatched first (the heavier role),
//     over query tiles (64 at d = 32 and 64, 16 at d = 128): D_i = <dout_i, out_i> of the
//     tile's rows from its out and dout tiles in shared memory, then the transposed tiles S^T = K
//     Q^T and dPd^T = V dout^T (each warp owns 16 keys), then dV += Pd^T dout and dK += dS^T Q with
//     Pd^T and dS^T as A fragments straight from registers; L and D of the query tile's rows
//     come through shared memory as {L, D} pairs.
//   dQ role, one block per (64 queries, b * heads + h): D_i of its rows (from its out and dout
//     tiles, the out tile in the second K buffer before the first prefetch; the same sum in the
//     same order as the other role's: warp_diag_d), then over 64-key tiles S = Q K^T,
//     dPd = dout V^T, P = exp2(S log2(e) / sqrt(d) - L log2(e)), dS = P (dPd keep / (1 - p) - D),
//     dQ += dS K; dQ / sqrt(d) written.
// S and dPd are computed twice (once per role), and D once per key tile of each query row: the
// price of a deterministic dQ without atomics in one launch.
// kFlashDsGemm's backward launches the same kernel with kStoreDs and a grid of dK, dV blocks
// only: each also stores its dS^T registers as bf16 dS^T [b, head, key, query] (the values its dK
// product multiplies, before the 1 / sqrt(d) scale), and dQ = dS K / sqrt(d) is left to cuBLASLt
// (kernels/attention.cu).
// kFlashShort's forward and backward at T <= 128, d = 64 are kernels of their own (one block per
// head: no online rescaling, no recomputation): kernels/attention_flash_short.cu; the pieces they
// share with these (the forward's softmax steps among them) are in
// kernels/attention_flash_bf16.cuh.
//
// Dropout: keep_ij = attention_keep(rng, attention_mask_index(site, b heads + h, T, i, j), p),
// the bits of the CPU reference, drawn once, by the forward: one Philox block per 8 consecutive
// keys of a query (attention_keep_bits<8>, 16-bit uniforms), each drawn by exactly one lane of the
// warp and passed to the lanes of its quad holding its elements by two shuffles
// (flash_layout::keep_draw / keep_exchange_step), before the tile's S products: half the draws
// of 24-bit uniforms, which took one block per 4 keys and were the forward's largest cost besides
// the products (v2's forward at p = 0.1 against p = 0 on 2026-11-27: +41% at Small T 128, +86% at
// T 512). The forward saves them, 1 bit an element, one word a lane per 64 keys of a warp's rows
// (flash_layout::keep_tile_word, store_keep_bits: the bits a lane holds, transposed across the
// warp); the backward reads them back, the same words transposed back for a warp's query rows
// (load_keep_bits) or one word a lane per query tile of its keys passed on by shuffles
// (load_keep_word_t, keep_source_word_t), instead of drawing them in both roles: about 80 integer
// instructions a lane per Philox block (10 rounds) against, per C tile, a share of 5 shuffles (2
// for a transposed tile) beside its 4 to 8 mma.sync.
#include <cmath>

#include "kernels/attention_flash_bf16.cuh"

namespace electra::cuda {
namespace {

using namespace flash_bf16;  // the pieces the bf16 flash kernels share (attention_flash_bf16.cuh)
namespace fl = flash_layout;
using fl::Coord;

constexpr int kThreads = fl::kMmaWarps * kWarpSize;

// This lane's index, read from %laneid at each use: ptxas neither holds it nor what is computed
// from it live across the query-tile loop. With the lane passed in, it kept every C tile's
// shuffle source and bit position live there (when the source was computed per lane) and spilled
// them at head dim 128 (28 bytes on sm_90), and, once the tile loads were unrolled,
// load_keep_word_t's word offsets at d = 128 on sm_80 (12 bytes).
// Its range is stated, so that divisions by powers of 2 of what is computed from it are shifts.
__device__ __forceinline__ int lane_here() {
  int lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  __builtin_assume(lane >= 0 && lane < kWarpSize);
  return lane;
}

// The dK, dV role's saved keep bits of query tile i0 (kBr queries, i0 % 16 == 0) by the warp's
// keys key0 .. key0 + 15 (flash_layout::keep_word_t): lane l < kBr / 2 loads one word (all set
// where its tile starts past T: P is 0 there).
template <int kBr>
__device__ __forceinline__ uint32_t load_keep_word_t(const FlashParams& fp, int bh, int key0,
                                                     int i0) {
  const int lane = lane_here();
  __builtin_assume(i0 >= 0 && key0 >= 0);  // so that keep_word_t's divisions are shifts
  const bool inside = lane < kBr / 2 && i0 + 16 * (lane / 8) < fp.t && key0 + 8 * (lane % 2) < fp.t;
  return inside ? __ldg(keep_word(fp, bh, fl::keep_word_t(fp.t, key0, i0, lane))) : ~0u;
}

// The word that elements e, e + 1 (e even) of this lane's C tile n of S^T take their keep bits
// from: `word` of lane (this lane & kKeepSegmentMask) | keep_source_index_t(n, e), by
// shfl.sync.idx with that segment mask (flash_layout::shfl_idx_source), the index a constant
// once unrolled.
__device__ __forceinline__ uint32_t keep_source_word_t(uint32_t word, int n, int e) {
  uint32_t from;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, 0xffffffff;"
               : "=r"(from)
               : "r"(word), "r"(fl::keep_source_index_t(n, e)),
                 "r"(fl::kKeepSegmentMask << 8 | 31));
  return from;
}

// The bit of element e (e even) in that word, keep_source_t's `bit` (the same for every C tile);
// element e + 1's is 4 above it.
__device__ __forceinline__ uint32_t keep_mask_t() {
  return 1u << fl::keep_source_t(lane_here(), 0, 0).bit;
}

// The forward's blocks per SM: 3 where its shared memory allows them on both architectures (d
// tile 32 and 64: 25600 and 46080 B), its registers bounded accordingly (170); at d tile 128
// (87040 B: 1 block on sm_80, 2 on sm_90) unbounded. ptxas left to itself bounded the forward at
// d = 64 for 3 blocks too, and spilled once it saved the keep bits; with the bound stated it
// does not (docs/KERNELS.md).
constexpr int forward_min_blocks(int d) {
  return d == 128 ? 1 : 3;
}

template <int kD>
__global__ void __launch_bounds__(kThreads, forward_min_blocks(kD))
    flash_forward_kernel(const bf16* qkv, const int32_t* mask, bf16* out, float* lse,
                         FlashParams fp) {
  fp.rng = fp.rng.resolved();  // the step may live in device memory (engine/philox.h)
  using L = fl::MmaForward<kD>;
  constexpr int kBr = L::kBr, kBc = L::kBc, kLd = L::kLd;
  static_assert(kBc == 64, "real_keys64 gives the mask of 64 keys");
  extern __shared__ __align__(128) unsigned char smem[];
  const auto tile_at = [&](size_t offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16* q = tile_at(L::kQ);

  const int bh = blockIdx.y, b = bh / fp.heads, head = bh % fp.heads;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int i0 = blockIdx.x * kBr, row0 = i0 + warp * fl::kMmaRowsPerWarp;
  const int ld = 3 * fp.h;
  const bf16* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;
  const float scale_log2 = fp.scale * kLog2e;

  load_tile<kBr, kD>(q, q_src, ld, i0, fp);
  load_tile<kBc, kD>(tile_at(L::kK), q_src + fp.h, ld, 0, fp);
  load_tile<kBc, kD>(tile_at(L::kV), q_src + 2 * fp.h, ld, 0, fp);
  flash_mma::cp_async_commit();

  float o[kD / 8][4] = {};
  // Rows g and g + 8 of the warp (g = lane / 4): running max of S log2(e) / sqrt(d), and this
  // lane's part of the running sum (its 2 columns of every 8).
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int tiles = static_cast<int>(ceil_div(fp.t, kBc));
  for (int tile = 0; tile < tiles; ++tile) {
    const int j0 = tile * kBc, u = tile % 2;
    if (tile + 1 < tiles) {  // the next K, V into the other buffer, freed by the last barrier
      load_tile<kBc, kD>(tile_at(L::kK + (1 - u) * L::kTileK), q_src + fp.h, ld, j0 + kBc, fp);
      load_tile<kBc, kD>(tile_at(L::kV + (1 - u) * L::kTileK), q_src + 2 * fp.h, ld, j0 + kBc, fp);
      flash_mma::cp_async_commit();
    }
    // This lane's keep bits of the tile (bit 4 n + e: element e of C tile n), drawn while the
    // tiles load and before S holds registers (at d = 32, draws among the S products spilled
    // under the 3-block bound); saved for the backward.
    uint32_t saved[1] = {~0u};
    if (fp.p > 0.0f) {
      saved[0] = 0;
#pragma unroll
      for (int pair = 0; pair < kBc / 16; ++pair) {
        add_keep_bits(saved[0], pair, keep_bits_pair(fp, bh, row0, j0 + 16 * pair, lane));
      }
    }
    if (tile + 1 < tiles) {
      flash_mma::cp_async_wait<1>();
    } else {
      flash_mma::cp_async_wait<0>();
    }
    __syncthreads();  // this tile's K and V (and Q) are in shared memory
    float s[kBc / 8][4] = {};
    flash_mma::mma_abt_smem<kD, kBc>(s, q + warp * fl::kMmaRowsPerWarp * kLd,
                                     tile_at(L::kK + u * L::kTileK), kLd, lane);
    // Padded and out-of-range keys get S = -inf, so P = 0.
    const uint64_t keys[1] = {real_keys64(real, j0, fp.t)};
    float tile_max[2];
    mask_scale_rows<kBc / 8>(s, keys, scale_log2, lane, tile_max);
    float offset[2], factor[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float new_max = fmaxf(m[r], tile_max[r]);
      // new_max = -inf: no real key so far; every exp2 below is exp2(-inf) = 0 with offset 0.
      offset[r] = new_max == -INFINITY ? 0.0f : new_max;
      factor[r] = fast_exp2(m[r] - offset[r]);
      m[r] = new_max;
      l[r] *= factor[r];
    }
    exp_dropout_rows<kBc / 8>(s, offset, l, fp, saved);
    if (fp.p > 0.0f) store_keep_bits(saved[0], fp, bh, row0, j0, lane);
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) o[n][e] *= factor[e / 2];
    }
    flash_mma::mma_cb_smem<kBc, kD>(o, s, tile_at(L::kV + u * L::kTileK), kLd, lane);
    __syncthreads();  // buffer u is no longer read: the next iteration's prefetch may fill it
  }
  add_row_shares(l);
  store_out_rows<kD>(out + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d, o, l, row0, lane,
                     fp);
  store_row_lse(lse + static_cast<int64_t>(bh) * fp.t, m, l, row0, lane, fp);
}

// The dQ role: dQ of query tile `tile` of head bh (with D of its rows), looping over every key
// tile. `smem` holds fl::MmaDq<kD>.
template <int kD>
__device__ __forceinline__ void backward_dq_block(unsigned char* smem, const bf16* qkv,
                                                  const int32_t* mask, const bf16* out,
                                                  const bf16* dout, const float* lse, bf16* dqkv,
                                                  const FlashParams& fp, int bh, int q_tile) {
  using L = fl::MmaDq<kD>;
  constexpr int kBr = L::kBr, kBc = L::kBc, kLd = L::kLd;
  static_assert(kBc == 64, "real_keys64 gives the mask of 64 keys");
  const auto tile_at = [&](size_t offset) { return reinterpret_cast<bf16*>(smem + offset); };
  const int b = bh / fp.heads, head = bh % fp.heads;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int i0 = q_tile * kBr, row0 = i0 + warp * fl::kMmaRowsPerWarp;
  const int ld = 3 * fp.h;
  const bf16* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const bf16* g_src = dout + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;
  const float scale_log2 = fp.scale * kLog2e;
  const bf16* q = tile_at(L::kQ) + warp * fl::kMmaRowsPerWarp * kLd;
  const bf16* g = tile_at(L::kDout) + warp * fl::kMmaRowsPerWarp * kLd;

  // The out tile goes to the second K buffer, which the first key tile's prefetch fills only after
  // the barrier below.
  static_assert(L::kBr <= L::kBc, "the out tile fits a K buffer");
  bf16* out_tile = tile_at(L::kK + L::kTileK);
  load_tile<kBr, kD>(tile_at(L::kQ), q_src, ld, i0, fp);
  load_tile<kBr, kD>(tile_at(L::kDout), g_src, fp.h, i0, fp);
  load_tile<kBc, kD>(tile_at(L::kK), q_src + fp.h, ld, 0, fp);
  load_tile<kBc, kD>(tile_at(L::kV), q_src + 2 * fp.h, ld, 0, fp);
  load_tile<kBr, kD>(out_tile, out + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d, fp.h, i0,
                     fp);
  flash_mma::cp_async_commit();

  // L log2(e) of rows g and g + 8 while the tiles load, then their D from the out and dout tiles
  // (warp_rows_d; 0 past T, where the tiles are 0).
  float row_d[2], row_lse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + fl::mma_c(lane, 2 * r).row;
    row_lse[r] = i < fp.t ? lse[static_cast<int64_t>(bh) * fp.t + i] * kLog2e : INFINITY;
  }
  flash_mma::cp_async_wait<0>();
  __syncthreads();  // the tiles are in shared memory
  warp_rows_d<kD>(row_d, out_tile + warp * fl::kMmaRowsPerWarp * kLd, g, lane);
  __syncthreads();  // the out tile is read: the first prefetch may overwrite it

  float dq[kD / 8][4] = {};
  const int tiles = static_cast<int>(ceil_div(fp.t, kBc));
  for (int tile = 0; tile < tiles; ++tile) {
    const int j0 = tile * kBc, u = tile % 2;
    if (tile + 1 < tiles) {
      load_tile<kBc, kD>(tile_at(L::kK + (1 - u) * L::kTileK), q_src + fp.h, ld, j0 + kBc, fp);
      load_tile<kBc, kD>(tile_at(L::kV + (1 - u) * L::kTileK), q_src + 2 * fp.h, ld, j0 + kBc, fp);
      flash_mma::cp_async_commit();
      flash_mma::cp_async_wait<1>();
    } else {
      flash_mma::cp_async_wait<0>();
    }
    __syncthreads();
    const bf16* k = tile_at(L::kK + u * L::kTileK);
    float s[kBc / 8][4] = {}, dp[kBc / 8][4] = {};
    flash_mma::mma_abt_smem<kD, kBc>(s, q, k, kLd, lane);
    flash_mma::mma_abt_smem<kD, kBc>(dp, g, tile_at(L::kV + u * L::kTileK), kLd, lane);
    const uint64_t keys = real_keys64(real, j0, fp.t);
    const uint32_t saved = fp.p > 0.0f ? load_keep_bits(fp, bh, row0, j0, lane) : ~0u;
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n) {
      const uint32_t keep = saved >> (4 * n);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float prob =
            key_is_real(keys, lane, n, e) ? fast_exp2(s[n][e] * scale_log2 - row_lse[e / 2]) : 0.0f;
        const float kept = ((keep >> e) & 1u) != 0 ? fp.keep_scale : 0.0f;
        s[n][e] = prob * fmaf(dp[n][e], kept, -row_d[e / 2]);  // dS
      }
    }
    flash_mma::mma_cb_smem<kBc, kD>(dq, s, k, kLd, lane);
    __syncthreads();  // buffer u is no longer read
  }
  store_rows<kD>(dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d, ld, dq, fp.scale, row0,
                 lane, fp);
}

// L log2(e) of the query rows [i0, i0 + kRows) into the .x of their statistics in shared memory
// (+inf past T, so that P = 0 there).
template <int kRows>
__device__ __forceinline__ void load_row_lse(float2* row_stats, const float* lse, int bh, int i0,
                                             const FlashParams& fp) {
  static_assert(kRows <= kThreads, "one row a thread");
  const int r = threadIdx.x;
  if (r < kRows) {
    row_stats[r].x =
        i0 + r < fp.t ? lse[static_cast<int64_t>(bh) * fp.t + i0 + r] * kLog2e : INFINITY;
  }
}

// D of the query rows [0, kRows) of a tile into the .y of their statistics in shared memory, from
// the out and dout tiles there (rows of operand_ld(kD), zero past T): warp w < kRows / 16 takes
// rows 16 w .. 16 w + 15 (warp_diag_d), and the lanes holding their D write them; complete when
// the caller synchronises.
template <int kRows, int kD>
__device__ __forceinline__ void tile_row_d(float2* row_stats, const bf16* out_tile,
                                           const bf16* dout_tile) {
  constexpr int kLd = fl::operand_ld(kD), kRowsPerWarp = fl::kMmaRowsPerWarp;
  static_assert(kRows % kRowsPerWarp == 0 && kRows / kRowsPerWarp <= fl::kMmaWarps,
                "one warp per 16 rows");
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (warp >= kRows / kRowsPerWarp) return;  // warp-uniform
  const int row0 = warp * kRowsPerWarp;
  const float2 d = warp_diag_d<kD>(out_tile + row0 * kLd, dout_tile + row0 * kLd, lane);
  if (lane == fl::diag_c(lane / 4).lane) {
    row_stats[row0 + lane / 4].y = d.x;
    row_stats[row0 + lane / 4 + 8].y = d.y;
  }
}

// kFlashDsGemm: a warp's dS^T tile (its 16 keys of the block's 64 from j0, kBr queries from i0)
// into `ds_head` (dS^T [T][T] of the head, [key][query]) where key and query are inside T
// (flash_layout::ds_store_t), rounded to bf16 as pack_bf16 rounds the dK product's operand.
// Elements 0, 1 (and 2, 3) are queries i, i + 1 of one key, i even: one 4-byte store when both
// are inside T and T is even (so the pair is 4-byte aligned); else one element at a time.
template <int kBr>
__device__ __forceinline__ void store_ds_t(bf16* ds_head, const float (&ds_t)[kBr / 8][4], int i0,
                                           int j0, int warp, int lane, const FlashParams& fp) {
#pragma unroll
  for (int n = 0; n < kBr / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const Coord at = fl::ds_store_t(warp, lane, n, e);
      const int j = j0 + at.row, i = i0 + at.col;
      if (j >= fp.t || i >= fp.t) continue;
      bf16* dst = ds_head + static_cast<int64_t>(j) * fp.t + i;
      if (i + 1 < fp.t && fp.t % 2 == 0) {
        *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(ds_t[n][e], ds_t[n][e + 1]);
      } else {
        dst[0] = __float2bfloat16_rn(ds_t[n][e]);
        if (i + 1 < fp.t) dst[1] = __float2bfloat16_rn(ds_t[n][e + 1]);
      }
    }
  }
}

// The dK, dV role: dK, dV of key tile `kv_tile` of head bh, looping over every query tile; D of
// each query tile is computed here from its out and dout tiles (in the dQ role's order, so the same
// bits), between the tile's arrival and its use. `smem` holds fl::MmaDkDv<kD>. With kStoreDs
// (kFlashDsGemm) it also writes dS of its (query, key) pairs into `ds` [B, heads, T, T].
template <int kD, bool kStoreDs>
__device__ __forceinline__ void backward_dkdv_block(unsigned char* smem, const bf16* qkv,
                                                    const int32_t* mask, const bf16* out,
                                                    const bf16* dout, const float* lse, bf16* dqkv,
                                                    bf16* ds, const FlashParams& fp, int bh,
                                                    int kv_tile) {
  using L = fl::MmaDkDv<kD>;
  constexpr int kBr = L::kBr, kBc = L::kBc, kLd = L::kLd;
  const auto tile_at = [&](size_t offset) { return reinterpret_cast<bf16*>(smem + offset); };
  // {L log2(e), D} of the query rows of buffer u.
  const auto row_stats = [&](int u) {
    return reinterpret_cast<float2*>(smem + L::kRowStats + u * L::kRowStatsBytes);
  };
  const int b = bh / fp.heads, head = bh % fp.heads;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int j0 = kv_tile * kBc, key0 = j0 + warp * fl::kMmaRowsPerWarp;
  const int ld = 3 * fp.h;
  const bf16* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const int64_t g_offset = static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  const bf16* g_src = dout + g_offset;
  const bf16* o_src = out + g_offset;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;
  const float scale_log2 = fp.scale * kLog2e;
  const bf16* k = tile_at(L::kK) + warp * fl::kMmaRowsPerWarp * kLd;
  const bf16* v = tile_at(L::kV) + warp * fl::kMmaRowsPerWarp * kLd;
  bf16* out_tile = tile_at(L::kOut);

  load_tile<kBc, kD>(tile_at(L::kK), q_src + fp.h, ld, j0, fp);
  load_tile<kBc, kD>(tile_at(L::kV), q_src + 2 * fp.h, ld, j0, fp);
  load_tile<kBr, kD>(tile_at(L::kQ), q_src, ld, 0, fp);
  load_tile<kBr, kD>(tile_at(L::kDout), g_src, fp.h, 0, fp);
  load_tile<kBr, kD>(out_tile, o_src, fp.h, 0, fp);
  load_row_lse<kBr>(row_stats(0), lse, bh, 0, fp);
  flash_mma::cp_async_commit();

  // Whether keys g and g + 8 of the warp are real (P = 0 exactly for the others).
  bool key_real[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = key0 + fl::mma_c(lane, 2 * r).row;
    key_real[r] = j < fp.t && real[j] != 0;
  }
  flash_mma::cp_async_wait<0>();
  __syncthreads();  // the first query tile is in shared memory
  tile_row_d<kBr, kD>(row_stats(0), out_tile, tile_at(L::kDout));
  float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
  const int tiles = static_cast<int>(ceil_div(fp.t, kBr));
  for (int tile = 0; tile < tiles; ++tile) {
    const int i0 = tile * kBr, u = tile % 2;
    // D of this tile is complete; the out tile and buffer 1 - u are no longer read.
    __syncthreads();
    if (tile + 1 < tiles) {  // the next query tile loads while this one is multiplied
      load_tile<kBr, kD>(tile_at(L::kQ + (1 - u) * L::kTileQ), q_src, ld, i0 + kBr, fp);
      load_tile<kBr, kD>(tile_at(L::kDout + (1 - u) * L::kTileQ), g_src, fp.h, i0 + kBr, fp);
      load_tile<kBr, kD>(out_tile, o_src, fp.h, i0 + kBr, fp);
      load_row_lse<kBr>(row_stats(1 - u), lse, bh, i0 + kBr, fp);
      flash_mma::cp_async_commit();
    }
    const bf16* q = tile_at(L::kQ + u * L::kTileQ);
    const bf16* g = tile_at(L::kDout + u * L::kTileQ);
    const float2* stats = row_stats(u);
    float st[kBr / 8][4] = {}, dpt[kBr / 8][4] = {};
    flash_mma::mma_abt_smem<kD, kBr>(st, k, q, kLd, lane);
    flash_mma::mma_abt_smem<kD, kBr>(dpt, v, g, kLd, lane);
    // All set at p = 0, so that the shuffles below give every element kept.
    const uint32_t saved = fp.p > 0.0f ? load_keep_word_t<kBr>(fp, bh, key0, i0) : ~0u;
    const uint32_t keep_mask = keep_mask_t();
#pragma unroll
    for (int n = 0; n < kBr / 8; ++n) {
      const uint32_t words[2] = {keep_source_word_t(saved, n, 0), keep_source_word_t(saved, n, 2)};
      // {L, D} of queries c and c + 1 (c = the C tile's column of elements 0 and 2).
      const float4 pair = *reinterpret_cast<const float4*>(stats + 8 * n + fl::mma_c(lane, 0).col);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float row_lse = e % 2 == 0 ? pair.x : pair.z, row_d = e % 2 == 0 ? pair.y : pair.w;
        const float prob = key_real[e / 2] ? fast_exp2(st[n][e] * scale_log2 - row_lse) : 0.0f;
        const bool keep_e = (words[e / 2] & keep_mask << 4 * (e % 2)) != 0;
        const float kept = keep_e ? fp.keep_scale : 0.0f;
        st[n][e] = prob * kept;                            // Pd^T
        dpt[n][e] = prob * fmaf(dpt[n][e], kept, -row_d);  // dS^T
      }
    }
    if constexpr (kStoreDs) {
      store_ds_t<kBr>(ds + static_cast<int64_t>(bh) * fp.t * fp.t, dpt, i0, j0, warp, lane, fp);
    }
    flash_mma::mma_cb_smem<kBr, kD>(dv, st, g, kLd, lane);
    flash_mma::mma_cb_smem<kBr, kD>(dk, dpt, q, kLd, lane);
    if (tile + 1 < tiles) {
      flash_mma::cp_async_wait<0>();
      __syncthreads();  // the next tile's out and dout have arrived for its D
      tile_row_d<kBr, kD>(row_stats(1 - u), out_tile, tile_at(L::kDout + (1 - u) * L::kTileQ));
    }
  }
  bf16* grad_rows = dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  store_rows<kD>(grad_rows + fp.h, ld, dk, fp.scale, key0, lane, fp);
  store_rows<kD>(grad_rows + 2 * fp.h, ld, dv, 1.0f, key0, lane, fp);
}

// The backward, one launch (flash_backward_grid): each block runs one role. No block reads what
// another writes, so the roles run in any order. kStoreDs (kFlashDsGemm): the grid holds dK, dV
// blocks only, which also write dS into `ds` (null otherwise). Its registers unbounded (at least 1
// block per SM): left to itself ptxas bounded some instances for 3 blocks (168 registers) and
// spilled; they take 212-255, 2 blocks per SM as before (docs/KERNELS.md).
template <int kD, bool kStoreDs>
__global__ void __launch_bounds__(kThreads, 1)
    flash_backward_kernel(const bf16* qkv, const int32_t* mask, const bf16* out, const bf16* dout,
                          const float* lse, bf16* dqkv, bf16* ds, FlashParams fp, int kv_tiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  const FlashBackwardBlock block = flash_backward_block(kv_tiles);
  if constexpr (kStoreDs) {
    backward_dkdv_block<kD, true>(smem, qkv, mask, out, dout, lse, dqkv, ds, fp, block.bh,
                                  block.tile);
  } else if (block.dkdv) {
    backward_dkdv_block<kD, false>(smem, qkv, mask, out, dout, lse, dqkv, ds, fp, block.bh,
                                   block.tile);
  } else {
    backward_dq_block<kD>(smem, qkv, mask, out, dout, lse, dqkv, fp, block.bh, block.tile);
  }
}

bf16* bf16_of(const Tensor& t) {
  return static_cast<bf16*>(t.data);
}

}  // namespace

void flash_forward_bf16(Context& ctx, const FlashParams& fp, const Tensor& qkv, const Tensor& mask,
                        const Tensor& lse, const Tensor& out) {
  const int64_t heads_total = qkv.dim(0) * fp.heads;
  with_tile_width(fp.d, [&](auto width) {
    constexpr int kD = decltype(width)::value;
    flash_launch(ctx, flash_forward_kernel<kD>, kThreads,
                 flash_forward_grid(fp, heads_total, DType::BF16),
                 flash_launch_bytes(FlashLaunch::kForward, DType::BF16, fp.d), bf16_of(qkv),
                 mask.ptr<int32_t>(), bf16_of(out), lse.ptr<float>(), fp);
  });
}

void flash_backward_bf16(Context& ctx, const FlashParams& fp, const Tensor& qkv, const Tensor& mask,
                         const Tensor& lse, const Tensor& out, const Tensor& dout,
                         const Tensor& dqkv, const Tensor* ds) {
  const FlashLaunch launch = ds != nullptr ? FlashLaunch::kBackwardDkDv : FlashLaunch::kBackward;
  const FlashBackwardGrid tiles = flash_backward_tiles(fp, DType::BF16, launch);
  const auto run = [&](auto kernel) {
    flash_launch(ctx, kernel, kThreads, flash_backward_grid(tiles, qkv.dim(0) * fp.heads),
                 flash_launch_bytes(launch, DType::BF16, fp.d), bf16_of(qkv), mask.ptr<int32_t>(),
                 bf16_of(out), bf16_of(dout), lse.ptr<float>(), bf16_of(dqkv),
                 ds != nullptr ? bf16_of(*ds) : nullptr, fp, tiles.kv_tiles);
  };
  with_backward_kernel(fp.d, ds != nullptr, [&](auto width, auto store_ds) {
    run(flash_backward_kernel<decltype(width)::value, decltype(store_ds)::value>);
  });
}

}  // namespace electra::cuda
