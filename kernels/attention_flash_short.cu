// attention on the GPU: kFlashShort's kernels for bf16 at T <= 128 and head dim d = 64 (every
// ELECTRA size has d = 64, and the paper pre-trains at T = 128), one block of 8 warps per
// (b, head) that holds the whole head in shared memory; warp w owns queries 16 w .. 16 w + 15 in
// both (warps with 16 w >= T skip the work, not the barriers). Math and contract:
// kernels/attention.h; every other shape is v2's (kernels/attention_flash.cu).
//
// Forward (flash_layout::MmaShortForward: Q, K, V), one pass over all keys, no online rescaling:
//   1. cp.async loads Q and K (one commit group), then V (a second), [128][64] bf16 each with rows
//      past T zero. Meanwhile each warp takes the padding mask of the 128 keys (4 ballots) and
//      draws the keep bits of all its 16 x 128 elements (flash_bf16::keep_bits_pair, v2's draws:
//      one Philox block per 8 keys of a query at attention_mask_index, the CPU reference's bits),
//      4 bits a C tile in 2 words a lane: the Philox rounds overlap the loads
//      and never hold registers beside S. They are also saved for the backward (add_keep_bits,
//      then one bit transpose and one 128-byte store a warp per 64 keys, store_keep_bits).
//   2. Once Q and K are in: S = Q_w K^T (16 x 128 f32 in registers, mma.sync m16n8k16 from
//      ldmatrix fragments), S log2(e) / sqrt(d) with -inf for padded keys and keys >= T, the exact
//      row max m over the 128 keys (the 4 lanes of a row by shuffles xor 1, then xor 2), P =
//      exp2(S - m) with this lane's share of the row sum l, Pd = P keep / (1 - p): the code v2's
//      forward runs on each 64-key tile (mask_scale_rows, exp_dropout_rows) over 16 C tiles instead
//      of 8. Then the 4 lanes' shares of l are added in v2's order (add_row_shares), L = m ln 2 +
//      log l is written (store_row_lse; +inf for a row with no real key), and Pd is packed into
//      bf16 A fragments (a_from_c: the rounding mma_cb_smem applies), 32 registers instead of 64
//      over the barrier.
//   3. Once V is in: O = Pd V (V by ldmatrix.trans, 8 key steps of 16 in ascending order), out =
//      O / l (store_out_rows; 0 for a row with no real key). Rows past T are not written.
// out and L differ from v2's by rounding only: v2 sums l and O per 64-key tile, rescaling both
// when its running max grows.
//
// Backward (flash_layout::MmaShort), in one pass: S and dPd once each, no recomputation, no
// atomics, no block reading what another writes (two runs give the same bits).
//   1. cp.async loads Q, K (one commit group), then V, dout and out (a second one) of the head,
//      [128][64] bf16 each with rows past T zero; each lane reads L of its two query rows from
//      global memory and each warp the padding mask of the 128 keys (4 ballots) meanwhile.
//   2. Warp w owns queries 16 w .. 16 w + 15: S = Q_w K^T (16 x 128, f32 in registers, mma.sync
//      m16n8k16 from ldmatrix fragments) once Q and K are in, dPd = dout_w V^T once the rest is;
//      D_i = <dout_i, out_i> of its rows from the out and dout tiles (warp_diag_d: the
//      products and order of v2's blocks, so the same bits); then per element P = exp2(S log2(e) /
//      sqrt(d) - L log2(e)), 0 for padded keys and keys >= T, the keep bit the forward saved
//      (load_keep_bits: one word a lane per 64 keys, transposed by shuffles; no Philox), Pd = P
//      keep / (1 - p), dS = P (dPd keep / (1 - p) - D). Pd and dS go to
//      shared memory as bf16 [query][key] (the values v2's dK, dV products multiply: the same
//      rounding), and dQ_w = dS K / sqrt(d) (16 x 64, dS as A fragments from registers) is
//      written.
//   3. After a barrier warp w owns keys 16 w .. 16 w + 15: dV = Pd^T dout and dK = dS^T Q / sqrt(d)
//      over the ceil(T / 16) query steps of 16 (the rows phase 2 wrote; rows past T of its last
//      step are zeros), the A fragments Pd^T and dS^T read by ldmatrix.trans from the [query][key]
//      tiles (flash_layout::ldsm_b's map), the B fragments from the dout and Q tiles; dK, dV
//      written.
// dV and dK add their 16-query mma steps in ascending order as v2's dK, dV blocks do, and dQ its
// 16-key steps as v2's dQ blocks do.
#include <cmath>

#include "kernels/attention.h"
#include "kernels/attention_flash_bf16.cuh"

namespace electra::cuda {
namespace {

using namespace flash_bf16;  // the pieces the bf16 flash kernels share (attention_flash_bf16.cuh)
namespace fl = flash_layout;
using L = fl::MmaShort;
using F = fl::MmaShortForward;

constexpr int kThreads = L::kWarps * kWarpSize;
constexpr int kRows = L::kRows, kD = L::kD, kLd = L::kLd, kLdScores = L::kLdScores;
constexpr int kKeyTiles = kRows / 8;  // the 16 x 8 C tiles of a warp's 16 x 128 S
static_assert(kRows == kFlashShortMaxSeqLen && kD == kFlashShortHeadDim,
              "the layout is the shape attention_uses_short accepts");
static_assert(kRows == 128, "two real_keys64 masks cover the keys");
static_assert(F::kRows == kRows && F::kD == kD && F::kLd == kLd, "one shape both ways");

// The forward's blocks per SM that its registers must allow (F::kMinBlocks = 2): 128 registers a
// thread (S takes 64, then Pd as bf16 pairs 32 and O 32; unbounded, ptxas takes 149 on sm_80 and
// 146 on sm_90, 1 block per SM), where its 55296 bytes of shared memory allow 2 blocks on sm_80
// and 4 on sm_90; 3 would cap the registers at 85, below S and its operands.
constexpr int kShortForwardBlocks = F::kMinBlocks;

// The head's Q, K and V into the tiles q, k, v ([kRows][kLd], rows past T zero): Q and K as one
// commit group, then V as a second (each part of its group when fp.vec, else plain stores,
// complete at the caller's next barrier).
__device__ __forceinline__ void load_qkv(bf16* q, bf16* k, bf16* v, const bf16* q_src, int ld,
                                         const FlashParams& fp) {
  load_tile<kRows, kD, kThreads>(q, q_src, ld, 0, fp);
  load_tile<kRows, kD, kThreads>(k, q_src + fp.h, ld, 0, fp);
  flash_mma::cp_async_commit();
  load_tile<kRows, kD, kThreads>(v, q_src + 2 * fp.h, ld, 0, fp);
}

// The real keys of sequence b (bit c of keys[c / 64]: key c inside T and not padding); by the
// whole warp (ballots).
__device__ __forceinline__ void real_keys128(uint64_t (&keys)[2], const int32_t* mask, int b,
                                             const FlashParams& fp) {
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;
  keys[0] = real_keys64(real, 0, fp.t);
  keys[1] = real_keys64(real, 64, fp.t);
}

// The keep bits of this lane's elements of the warp's kKeyTiles C tiles of queries row0 ..
// row0 + 15 by keys 0 .. 127 (keep_bits_pair: v2's draws), 4 a tile: bits 4 (n % 8) .. + 3 of
// words[n / 8] for tile n (bit e: element e); all set at p = 0, where nothing is drawn. Saved for
// the backward too, as they are (store_keep_bits; row0 < T).
__device__ __forceinline__ void keep_bits_head(uint32_t (&words)[kKeyTiles / 8],
                                               const FlashParams& fp, int bh, int row0, int lane) {
  if (!(fp.p > 0.0f)) {
    words[0] = words[1] = ~0u;
    return;
  }
  words[0] = words[1] = 0;
#pragma unroll
  for (int m = 0; m < kKeyTiles / 2; ++m) {  // pairs of C tiles: keys 16 m .. 16 m + 15
    add_keep_bits(words[m / 4], m % 4, keep_bits_pair(fp, bh, row0, 16 * m, lane));
  }
  // words[half] is the bits store_keep_bits saves for keys 64 half .. + 63.
#pragma unroll
  for (int half = 0; half < kKeyTiles / 8; ++half) {
    store_keep_bits(words[half], fp, bh, row0, 64 * half, lane);
  }
}

__global__ void __launch_bounds__(kThreads, kShortForwardBlocks)
    flash_short_forward_kernel(const bf16* qkv, const int32_t* mask, bf16* out, float* lse,
                               FlashParams fp) {
  fp.rng = fp.rng.resolved();  // the step may live in device memory (engine/philox.h)
  extern __shared__ __align__(128) unsigned char smem[];
  const auto tile_at = [&](size_t offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16 *q = tile_at(F::kQ), *k = tile_at(F::kK), *v = tile_at(F::kV);

  const int bh = blockIdx.x, b = bh / fp.heads, head = bh % fp.heads;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int row0 = warp * fl::kMmaRowsPerWarp;  // the warp's 16 queries; warp-uniform
  const bool active = row0 < fp.t;
  const int ld = 3 * fp.h;

  load_qkv(q, k, v, qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d, ld, fp);
  flash_mma::cp_async_commit();
  // While the tiles load: the real keys, and every keep bit the warp's rows need (drawn before S
  // is computed, so that the Philox rounds never hold registers beside S).
  uint64_t keys[2] = {0, 0};
  uint32_t keep[kKeyTiles / 8] = {~0u, ~0u};
  if (active) {
    real_keys128(keys, mask, b, fp);
    keep_bits_head(keep, fp, bh, row0, lane);
  }

  // Rows g and g + 8 of the warp (g = lane / 4): the max of S log2(e) / sqrt(d) over the real
  // keys (-inf where none is) and this lane's share of the sum of P (its 2 keys of every 8).
  float s[kKeyTiles][4] = {}, m[2], l[2] = {0.0f, 0.0f};
  uint32_t pd[kRows / 16][4];  // Pd as bf16 A fragments (mma_cb_smem's rounding), over the barrier
  flash_mma::cp_async_wait<1>();
  __syncthreads();  // Q and K are in shared memory
  if (active) {
    flash_mma::mma_abt_smem<kD, kRows>(s, q + row0 * kLd, k, kLd, lane);
    mask_scale_rows<kKeyTiles>(s, keys, fp.scale * kLog2e, lane, m);
    // m = -inf: no real key; every exp2 below is exp2(-inf) = 0 with offset 0.
    const float offset[2] = {m[0] == -INFINITY ? 0.0f : m[0], m[1] == -INFINITY ? 0.0f : m[1]};
    exp_dropout_rows<kKeyTiles>(s, offset, l, fp, keep);  // s = Pd
    add_row_shares(l);
    store_row_lse(lse + static_cast<int64_t>(bh) * fp.t, m, l, row0, lane, fp);  // L now: m dies
#pragma unroll
    for (int kk = 0; kk < kRows / 16; ++kk) flash_mma::a_from_c(pd[kk], s, kk);
  }
  flash_mma::cp_async_wait<0>();
  __syncthreads();  // V too
  if (active) {
    float o[kD / 8][4] = {};
    flash_mma::mma_ab_smem<kRows, kD>(o, pd, v, kLd, lane);
    store_out_rows<kD>(out + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d, o, l, row0, lane,
                       fp);
  }
}

// A lane's two elements e, e + 1 (e even) of C tile n of the warp whose rows start at row0, as a
// bf16 pair at their place in the [query][key] tile `scores` (row stride kLdScores).
__device__ __forceinline__ void store_score_pair(bf16* scores, int row0, int n, int e, int lane,
                                                 float x0, float x1) {
  const fl::Coord c = fl::mma_c(lane, e);
  *reinterpret_cast<__nv_bfloat162*>(scores + (row0 + c.row) * kLdScores + 8 * n + c.col) =
      __floats2bfloat162_rn(x0, x1);
}

__global__ void __launch_bounds__(kThreads, 1)
    flash_short_backward_kernel(const bf16* qkv, const int32_t* mask, const bf16* out,
                                const bf16* dout, const float* lse, bf16* dqkv, FlashParams fp) {
  extern __shared__ __align__(128) unsigned char smem[];
  const auto tile_at = [&](size_t offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16 *q = tile_at(L::kQ), *k = tile_at(L::kK), *v = tile_at(L::kV);
  bf16 *g = tile_at(L::kDout), *o = tile_at(L::kOut), *pd = tile_at(L::kPd), *ds = tile_at(L::kDs);

  const int bh = blockIdx.x, b = bh / fp.heads, head = bh % fp.heads;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  // The warp's 16 queries in phase 2, its 16 keys in phase 3; warp-uniform.
  const int row0 = warp * fl::kMmaRowsPerWarp;
  const bool active = row0 < fp.t;
  const int ld = 3 * fp.h;
  const bf16* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const int64_t g_offset = static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  const float scale_log2 = fp.scale * kLog2e;

  load_qkv(q, k, v, q_src, ld, fp);
  load_tile<kRows, kD, kThreads>(g, dout + g_offset, fp.h, 0, fp);
  load_tile<kRows, kD, kThreads>(o, out + g_offset, fp.h, 0, fp);
  flash_mma::cp_async_commit();

  // While the tiles load: L log2(e) of rows g and g + 8 of the warp (+inf past T, so P = 0) and
  // the real keys (bit c of keys[c / 64]: key c inside T and not padding).
  float row_lse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + fl::mma_c(lane, 2 * r).row;
    row_lse[r] = i < fp.t ? lse[static_cast<int64_t>(bh) * fp.t + i] * kLog2e : INFINITY;
  }
  uint64_t keys[2] = {0, 0};
  if (active) real_keys128(keys, mask, b, fp);

  float s[kKeyTiles][4] = {};  // S, then dS
  flash_mma::cp_async_wait<1>();
  __syncthreads();  // Q and K are in shared memory
  if (active) flash_mma::mma_abt_smem<kD, kRows>(s, q + row0 * kLd, k, kLd, lane);
  flash_mma::cp_async_wait<0>();
  __syncthreads();  // V, dout and out too

  if (active) {
    float dp[kKeyTiles][4] = {};
    flash_mma::mma_abt_smem<kD, kRows>(dp, g + row0 * kLd, v, kLd, lane);
    // D of rows g and g + 8, as v2's blocks sum it (zero past T, where the tiles are).
    float row_d[2];
    warp_rows_d<kD>(row_d, o + row0 * kLd, g + row0 * kLd, lane);
    uint32_t saved[kKeyTiles / 8] = {~0u, ~0u};  // keys 0 .. 63, 64 .. 127 (load_keep_bits)
    if (fp.p > 0.0f) {
      saved[0] = load_keep_bits(fp, bh, row0, 0, lane);
      saved[1] = load_keep_bits(fp, bh, row0, 64, lane);
    }
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
      const uint32_t keep = saved[n / 8] >> (4 * (n % 8));
      float pd_val[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float prob = key_is_real(keys[n / 8], lane, n, e)
                               ? fast_exp2(s[n][e] * scale_log2 - row_lse[e / 2])
                               : 0.0f;
        const float kept = ((keep >> e) & 1u) != 0 ? fp.keep_scale : 0.0f;
        pd_val[e] = prob * kept;
        s[n][e] = prob * fmaf(dp[n][e], kept, -row_d[e / 2]);  // dS
      }
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        store_score_pair(pd, row0, n, e, lane, pd_val[e], pd_val[e + 1]);
        store_score_pair(ds, row0, n, e, lane, s[n][e], s[n][e + 1]);
      }
    }
    float dq[kD / 8][4] = {};
    flash_mma::mma_cb_smem<kRows, kD>(dq, s, k, kLd, lane);
    store_rows<kD>(dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d, ld, dq, fp.scale, row0,
                   lane, fp);
  }
  __syncthreads();  // Pd and dS of every query row inside T are in shared memory

  if (active) {
    float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
    const int steps = static_cast<int>(ceil_div(fp.t, fl::kMmaRowsPerWarp));
    for (int kk = 0; kk < steps; ++kk) {
      const int i0 = kk * fl::kMmaRowsPerWarp, at = i0 * kLdScores + row0;
      flash_mma::mma_atb_step<kD>(dv, pd + at, kLdScores, g + i0 * kLd, kLd, lane);
      flash_mma::mma_atb_step<kD>(dk, ds + at, kLdScores, q + i0 * kLd, kLd, lane);
    }
    bf16* grad_rows = dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
    store_rows<kD>(grad_rows + fp.h, ld, dk, fp.scale, row0, lane, fp);
    store_rows<kD>(grad_rows + 2 * fp.h, ld, dv, 1.0f, row0, lane, fp);
  }
}

bf16* bf16_of(const Tensor& t) {
  return static_cast<bf16*>(t.data);
}

}  // namespace

void flash_attention_forward_short(Context& ctx, const Tensor& qkv, const Tensor& mask,
                                   const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                                   const Tensor& keep) {
  check_dtype(qkv, DType::BF16, "attention (flash, one block per head): qkv");
  const FlashParams fp = flash_params(qkv, args, keep, {qkv.data, out.data});
  ELECTRA_CHECK(fp.t <= kRows && fp.d == kD,
                "attention (flash, one block per head): needs T <= 128 and head dim 64, got T = ",
                fp.t, ", head dim ", fp.d);
  flash_launch(ctx, flash_short_forward_kernel, kThreads,
               dim3(static_cast<unsigned>(qkv.dim(0) * args.heads)),
               fl::flash_short_forward_shared_bytes(), bf16_of(qkv), mask.ptr<int32_t>(),
               bf16_of(out), lse.ptr<float>(), fp);
}

void flash_attention_backward_short(Context& ctx, const Tensor& qkv, const Tensor& mask,
                                    const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                                    const Tensor& dout, const Tensor& keep, const Tensor& dqkv) {
  check_dtype(qkv, DType::BF16, "attention (flash, one pass): qkv");
  const FlashParams fp = flash_params(qkv, args, keep, {qkv.data, dout.data, out.data, dqkv.data});
  ELECTRA_CHECK(fp.t <= kRows && fp.d == kD,
                "attention (flash, one pass): needs T <= 128 and head dim 64, got T = ", fp.t,
                ", head dim ", fp.d);
  flash_launch(ctx, flash_short_backward_kernel, kThreads,
               dim3(static_cast<unsigned>(qkv.dim(0) * args.heads)),
               fl::flash_short_backward_shared_bytes(), bf16_of(qkv), mask.ptr<int32_t>(),
               bf16_of(out), bf16_of(dout), lse.ptr<float>(), bf16_of(dqkv), fp);
}

}  // namespace electra::cuda
