// attention on the GPU, version 2: FlashAttention-2 style fused kernels (Dao, 2023) for T <= 512
// and head dim d <= 128: the entry points, and the f32 kernels (the parity mode: exact f32 sums
// by FMA loops, speed secondary). bf16 runs the register-tile kernels of
// kernels/attention_flash_bf16.cu. Tiles are sized for kD = 32, 64 or 128 columns; a smaller d is
// zero-padded in shared memory, which adds nothing to any dot product.
//
// f32 forward, one block per (query tile of kBr rows, b * heads + h): the Q tile stays in shared
// memory; for each tile of kBc keys, K and V are loaded, S = Q K^T / sqrt(d), then per row an
// online softmax (running max m and sum l in f32):
//   m' = max(m, max_j S_ij),  l' = l exp(m - m') + sum_j exp(S_ij - m'),
//   O' = O exp(m - m') + Pd V,  Pd_ij = exp(S_ij - m') keep_ij / (1 - p)
// and at the end out = O / l and L = m + log l are written. O lives in f32 shared memory.
//
// f32 backward, one kernel whose grid holds two roles (flash_backward_grid), no atomics and no
// block waiting on another (deterministic):
//   dK, dV role: one block per (key tile, b * heads + h), dispatched first, looping over the
//     query tiles: L and D_i = <dout_i, out_i> (= sum_k P_ik dP_ik) of the tile's rows, one warp
//     per row, then P = exp(S - L), dV += Pd^T dout, dPd = dout V^T,
//     dS = P (dPd keep / (1 - p) - D), dK += dS^T Q / sqrt(d);
//   dQ role: one block per (query tile, b * heads + h): D of its rows (the same sum, so the same
//     bits), then over the key tiles dQ += dS K / sqrt(d) (it recomputes S and dPd rather than
//     share dS through atomics).
// kFlashDsGemm launches the same kernel with kStoreDs and the dK, dV blocks only: each also
// copies its f32 dS tiles (the ones its dK product reads, before the 1 / sqrt(d) scale) into
// dS^T [B, heads, T (key), T (query)], and dQ = dS K / sqrt(d) is left to cuBLASLt
// (kernels/attention.cu).
//
// Dropout: keep_ij = attention_keep(rng, attention_mask_index(site, b heads + h, T, i, j), p),
// the mask of version 1 and the CPU reference (kernels/dropout_mask.h: 16-bit uniforms),
// regenerated wherever P is recomputed: one Philox block (10 rounds) gives the bits of 8
// consecutive keys starting at a multiple of 8 (attention_keep_bits<8>, the forward's tiles), the
// backward's groups of 4 keys draw one each (attention_keep_bits<4>). Shared-memory layouts:
// kernels/attention_flash_layout.h.
#include <cmath>
#include "kernels/attention_flash_common.cuh"
#include "kernels/attention_flash_layout.h"
#include "kernels/dropout_mask.h"

namespace electra::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * kWarpSize;
using flash_layout::f32_ld;
using flash_layout::operand_ld;

// Rows [row0, row0 + kRows) of one head (d columns from `src`, row stride ld) into the tile
// [kRows][operand_ld(kD)], zero past T and past d.
template <int kRows, int kD>
__device__ void load_tile(float* tile, const float* src, int64_t ld, int row0,
                          const FlashParams& fp) {
  constexpr int kLd = operand_ld(kD);
  if (fp.vec) {
    constexpr int kPack = Pack<float>::kSize, kChunks = kD / kPack;
    for (int idx = threadIdx.x; idx < kRows * kChunks; idx += blockDim.x) {
      const int r = idx / kChunks, c = idx % kChunks * kPack;
      Pack<float> pack;
      if (row0 + r < fp.t && c < fp.d) {
        pack = load_pack(src + (row0 + r) * ld + c);
      } else {
        for (int e = 0; e < kPack; ++e) pack.v[e] = 0.0f;
      }
      store_pack(tile + r * kLd + c, pack);
    }
  } else {
    for (int idx = threadIdx.x; idx < kRows * kD; idx += blockDim.x) {
      const int r = idx / kD, c = idx % kD;
      tile[r * kLd + c] = row0 + r < fp.t && c < fp.d ? src[(row0 + r) * ld + c] : 0.0f;
    }
  }
}

template <int kRows, int kCols>
__device__ void zero_f32(float* tile, int ld) {
  for (int idx = threadIdx.x; idx < kRows * kCols; idx += blockDim.x) {
    tile[idx / kCols * ld + idx % kCols] = 0.0f;
  }
}

// C[kM][kN] (ldc) = (accumulate ? C : 0) + A B over kK, every operand in shared memory, one
// thread per output element, k in order. A is [kM][kK] (lda), or stored transposed as [kK][kM]
// when kTransA; B is [kK][kN] (ldb), or stored transposed as [kN][kK] when kTransB. The caller
// synchronises before (operands written) and after (C read).
template <int kM, int kN, int kK, bool kTransA, bool kTransB>
__device__ void block_mma(const float* a, int lda, const float* b, int ldb, float* c, int ldc,
                          bool accumulate) {
  for (int idx = threadIdx.x; idx < kM * kN; idx += blockDim.x) {
    const int m = idx / kN, n = idx % kN;
    float sum = accumulate ? c[m * ldc + n] : 0.0f;
    for (int k = 0; k < kK; ++k) {
      sum +=
          (kTransA ? a[k * lda + m] : a[m * lda + k]) * (kTransB ? b[n * ldb + k] : b[k * ldb + n]);
    }
    c[m * ldc + n] = sum;
  }
}

// The keep bits of the [kBr][kBc] tile at (i0, j0), one byte per group of 8 keys:
// keep[r * kBc / 8 + c / 8] bit k = keep of (i0 + r, j0 + c + k). One Philox block per group;
// groups past T are not drawn (groups of padded keys are: testing their mask as the 4-key groups
// did made the sm_80 instances spill 4 bytes at their 32 registers).
template <int kBr, int kBc>
__device__ void dropout_keep_tile(uint8_t* keep, int bh, int i0, int j0, const FlashParams& fp) {
  constexpr int kGroups = kBc / 8;
  for (int g = threadIdx.x; g < kBr * kGroups; g += blockDim.x) {
    const int i = i0 + g / kGroups, j = j0 + g % kGroups * 8;
    keep[g] = i < fp.t && j < fp.t ? static_cast<uint8_t>(attention_keep_bits<8>(
                                         fp.rng, mask_row(fp, bh, i) + j, fp.keep_threshold))
                                   : uint8_t{0xFF};
  }
}

template <int kD>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(const float* qkv, const int32_t* mask, float* out, float* lse,
                         FlashParams fp) {
  fp.rng = fp.rng.resolved();  // the step may live in device memory (engine/philox.h)
  using L = flash_layout::F32Forward<kD>;
  constexpr int kBr = L::kBr, kBc = L::kBc;
  extern __shared__ __align__(128) unsigned char smem[];
  float* q = reinterpret_cast<float*>(smem + L::kQ);
  float* k = reinterpret_cast<float*>(smem + L::kK);
  float* v = reinterpret_cast<float*>(smem + L::kV);
  float* s = reinterpret_cast<float*>(smem + L::kS);
  float* pd = reinterpret_cast<float*>(smem + L::kP);
  float* o = reinterpret_cast<float*>(smem + L::kO);
  uint8_t* keep_bits = smem + L::kKeep;
  float* row_max = reinterpret_cast<float*>(smem + L::kStats);
  float* row_sum = row_max + kBr;
  float* factor = row_sum + kBr;  // exp(m - m') of the current key tile

  const int bh = blockIdx.y, b = bh / fp.heads, head = bh % fp.heads;
  const int i0 = blockIdx.x * kBr;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t ld = 3 * static_cast<int64_t>(fp.h);
  const float* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;

  load_tile<kBr, kD>(q, q_src, ld, i0, fp);
  zero_f32<kBr, kD>(o, L::kLdO);
  for (int r = threadIdx.x; r < kBr; r += blockDim.x) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
  }
  for (int j0 = 0; j0 < fp.t; j0 += kBc) {
    __syncthreads();  // the previous key tile's K, V and Pd are no longer read
    load_tile<kBc, kD>(k, q_src + fp.h, ld, j0, fp);
    load_tile<kBc, kD>(v, q_src + 2 * fp.h, ld, j0, fp);
    if (fp.p > 0.0f) dropout_keep_tile<kBr, kBc>(keep_bits, bh, i0, j0, fp);
    __syncthreads();
    block_mma<kBr, kBc, kD, false, true>(q, L::kLdT, k, L::kLdT, s, L::kLdS, false);
    __syncthreads();
    // Online softmax, one warp per row: padded and out-of-range keys get S = -inf, so P = 0.
    for (int r = warp; r < kBr; r += kWarps) {
      float x[kBc / kWarpSize];
      float tile_max = -INFINITY;
      for (int u = 0; u < kBc / kWarpSize; ++u) {
        const int c = lane + u * kWarpSize, j = j0 + c;
        x[u] = j < fp.t && real[j] != 0 ? s[r * L::kLdS + c] * fp.scale : -INFINITY;
        tile_max = fmaxf(tile_max, x[u]);
      }
      tile_max = warp_max(tile_max);
      const float old_max = row_max[r], new_max = fmaxf(old_max, tile_max);
      // new_max = -inf: no real key so far; every exp below is exp(-inf) = 0 with offset 0.
      const float offset = new_max == -INFINITY ? 0.0f : new_max;
      float sum = 0.0f;
      for (int u = 0; u < kBc / kWarpSize; ++u) {
        const int c = lane + u * kWarpSize;
        const float e = expf(x[u] - offset);
        sum += e;
        const bool keep =
            fp.p == 0.0f || e == 0.0f || ((keep_bits[r * (kBc / 8) + c / 8] >> (c % 8)) & 1u) != 0;
        pd[r * L::kLdP + c] = keep ? e * fp.keep_scale : 0.0f;
      }
      sum = warp_sum(sum);
      // Every lane's read of row_max[r] before lane 0 rewrites it: the shuffles of warp_sum
      // order the lanes' execution but not their shared-memory accesses (racecheck reported the
      // pair as a hazard on the 2026-11-27 H100 run).
      __syncwarp();
      if (lane == 0) {
        const float f = expf(old_max - offset);
        factor[r] = f;
        row_max[r] = new_max;
        row_sum[r] = row_sum[r] * f + sum;
      }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < kBr * kD; idx += blockDim.x) {
      o[idx / kD * L::kLdO + idx % kD] *= factor[idx / kD];
    }
    __syncthreads();
    block_mma<kBr, kD, kBc, false, false>(pd, L::kLdP, v, L::kLdT, o, L::kLdO, true);
  }
  __syncthreads();
  float* out_rows = out + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  for (int idx = threadIdx.x; idx < kBr * kD; idx += blockDim.x) {
    const int r = idx / kD, c = idx % kD;
    if (i0 + r < fp.t && c < fp.d) {
      const float l = row_sum[r];
      out_rows[static_cast<int64_t>(i0 + r) * fp.h + c] = l > 0.0f ? o[r * L::kLdO + c] / l : 0.0f;
    }
  }
  for (int r = threadIdx.x; r < kBr; r += blockDim.x) {
    if (i0 + r < fp.t) {
      const float l = row_sum[r];
      lse[static_cast<int64_t>(bh) * fp.t + i0 + r] = l > 0.0f ? row_max[r] + logf(l) : INFINITY;
    }
  }
}

// P, Pd and dS of one [kBr][kBc] tile (rows from i0, keys from j0) from the raw products
// S = Q K^T and dPd = dout V^T in f32:
//   P = exp(S / sqrt(d) - L_i) for real keys j < T and rows i < T, else 0 exactly;
//   Pd = P keep / (1 - p) (written over S when kWritePd);  dS = P (dPd keep / (1 - p) - D_i)
//   (written over dPd).
// Each thread takes groups of 4 consecutive keys of a row (one Philox block for their keep bits)
// and holds their values in registers: the whole block reads S and dPd, synchronises, then writes
// Pd and dS over them, rows of operand_ld(kBc) (flash_layout::F32Backward).
template <int kBr, int kBc, bool kWritePd>
__device__ void probs_and_grad_tile(float* s, float* dp, const float* row_lse, const float* row_d,
                                    const int32_t* real, int bh, int i0, int j0,
                                    const FlashParams& fp) {
  constexpr int kLdS = f32_ld(kBc), kLdP = operand_ld(kBc), kRowGroups = kBc / 4;
  static_assert(kBr * kRowGroups % kThreads == 0, "whole groups of 4 keys per thread");
  constexpr int kPerThread = kBr * kRowGroups / kThreads;
  float pd_val[kPerThread][4], ds_val[kPerThread][4];
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const int g = threadIdx.x + u * kThreads, r = g / kRowGroups, c = g % kRowGroups * 4;
    const int i = i0 + r, j = j0 + c;
    const float4 s4 = *reinterpret_cast<const float4*>(s + r * kLdS + c);
    const float4 dp4 = *reinterpret_cast<const float4*>(dp + r * kLdS + c);
    const float raw[4] = {s4.x, s4.y, s4.z, s4.w}, dpd[4] = {dp4.x, dp4.y, dp4.z, dp4.w};
    float prob[4];
    bool any = false;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      prob[e] = i < fp.t && j + e < fp.t && real[j + e] != 0 ? expf(raw[e] * fp.scale - row_lse[r])
                                                             : 0.0f;
      any = any || prob[e] != 0.0f;
    }
    const uint32_t keep_bits =
        fp.p > 0.0f && any
            ? attention_keep_bits<4>(fp.rng, mask_row(fp, bh, i) + j, fp.keep_threshold)
            : 0xFu;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const bool keep = fp.p == 0.0f || prob[e] == 0.0f || ((keep_bits >> e) & 1u) != 0;
      const float grad = keep ? dpd[e] * fp.keep_scale : 0.0f;
      pd_val[u][e] = keep ? prob[e] * fp.keep_scale : 0.0f;
      ds_val[u][e] = prob[e] * (grad - row_d[r]);
    }
  }
  __syncthreads();  // every S and dPd value is read: Pd and dS may overwrite them
  float* pd = s;
  float* ds = dp;
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const int g = threadIdx.x + u * kThreads, r = g / kRowGroups, c = g % kRowGroups * 4;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (kWritePd) pd[r * kLdP + c + e] = pd_val[u][e];
      ds[r * kLdP + c + e] = ds_val[u][e];
    }
  }
}

// L and D of the rows [i0, i0 + kBr) of head (b, head) into shared memory (+inf and 0 past T:
// P = 0 there); D from out and dout in global memory, one warp per row (flash_row_d).
template <int kBr>
__device__ void row_stats(float* row_lse, float* row_d, const float* lse, const float* out,
                          const float* dout, int b, int head, int bh, int i0,
                          const FlashParams& fp) {
  for (int r = threadIdx.x / kWarpSize; r < kBr; r += kWarps) {
    const int i = i0 + r;
    const float d = i < fp.t ? flash_row_d(out, dout, b, head, i, fp) : 0.0f;
    if (threadIdx.x % kWarpSize == 0) {
      row_lse[r] = i < fp.t ? lse[static_cast<int64_t>(bh) * fp.t + i] : INFINITY;
      row_d[r] = d;
    }
  }
}

// The dK, dV role: dK, dV of key tile `kv_tile` of head bh, looping over every query tile (with
// D of each). `smem` holds F32Backward<kD, 2>. With kStoreDs (kFlashDsGemm) it also writes dS of
// its (query, key) pairs inside T into `ds` [B, heads, T, T].
template <int kD, bool kStoreDs>
__device__ __forceinline__ void backward_dkdv_block(unsigned char* smem, const float* qkv,
                                                    const int32_t* mask, const float* out,
                                                    const float* dout, const float* lse,
                                                    float* dqkv, float* ds_rows,
                                                    const FlashParams& fp, int bh, int kv_tile) {
  using L = flash_layout::F32Backward<kD, 2>;
  constexpr int kBr = L::kBr, kBc = L::kBc;
  float* q = reinterpret_cast<float*>(smem + L::kQ);
  float* g = reinterpret_cast<float*>(smem + L::kDout);
  float* k = reinterpret_cast<float*>(smem + L::kK);
  float* v = reinterpret_cast<float*>(smem + L::kV);
  float* s = reinterpret_cast<float*>(smem + L::kS);
  float* dp = reinterpret_cast<float*>(smem + L::kDp);
  const float* pd = s;   // written over S by probs_and_grad_tile
  const float* ds = dp;  // written over dPd
  float* dk = reinterpret_cast<float*>(smem + L::kAcc);
  float* dv = dk + kBc * L::kLdA;
  float* row_lse = reinterpret_cast<float*>(smem + L::kRowStats);
  float* row_d = row_lse + kBr;

  const int b = bh / fp.heads, head = bh % fp.heads;
  const int j0 = kv_tile * kBc;
  const int64_t ld = 3 * static_cast<int64_t>(fp.h);
  const float* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const float* g_src = dout + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;

  load_tile<kBc, kD>(k, q_src + fp.h, ld, j0, fp);
  load_tile<kBc, kD>(v, q_src + 2 * fp.h, ld, j0, fp);
  zero_f32<kBc, kD>(dk, L::kLdA);
  zero_f32<kBc, kD>(dv, L::kLdA);
  for (int i0 = 0; i0 < fp.t; i0 += kBr) {
    __syncthreads();  // the previous query tile's Q, dout, Pd, dS, L, D are no longer read
    load_tile<kBr, kD>(q, q_src, ld, i0, fp);
    load_tile<kBr, kD>(g, g_src, fp.h, i0, fp);
    row_stats<kBr>(row_lse, row_d, lse, out, dout, b, head, bh, i0, fp);
    __syncthreads();
    block_mma<kBr, kBc, kD, false, true>(q, L::kLdT, k, L::kLdT, s, L::kLdS, false);
    block_mma<kBr, kBc, kD, false, true>(g, L::kLdT, v, L::kLdT, dp, L::kLdS, false);
    __syncthreads();
    probs_and_grad_tile<kBr, kBc, true>(s, dp, row_lse, row_d, real, bh, i0, j0, fp);
    __syncthreads();
    // kFlashDsGemm: dS^T rows of kBr queries a key, coalesced (the dS tile is not rewritten
    // before the next query tile's barriers).
    if constexpr (kStoreDs) {
      float* head = ds_rows + static_cast<int64_t>(bh) * fp.t * fp.t;
      for (int idx = threadIdx.x; idx < kBr * kBc; idx += blockDim.x) {
        const int c = idx / kBr, r = idx % kBr;
        if (i0 + r < fp.t && j0 + c < fp.t) {
          head[static_cast<int64_t>(j0 + c) * fp.t + i0 + r] = ds[r * L::kLdP + c];
        }
      }
    }
    block_mma<kBc, kD, kBr, true, false>(pd, L::kLdP, g, L::kLdT, dv, L::kLdA, true);
    block_mma<kBc, kD, kBr, true, false>(ds, L::kLdP, q, L::kLdT, dk, L::kLdA, true);
  }
  __syncthreads();
  float* grad_rows = dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  for (int idx = threadIdx.x; idx < kBc * kD; idx += blockDim.x) {
    const int r = idx / kD, c = idx % kD;
    if (j0 + r < fp.t && c < fp.d) {
      float* row = grad_rows + (j0 + r) * ld;
      row[fp.h + c] = dk[r * L::kLdA + c] * fp.scale;
      row[2 * fp.h + c] = dv[r * L::kLdA + c];
    }
  }
}

// The dQ role: dQ of query tile `q_tile` of head bh (with D of its rows), looping over every key
// tile. `smem` holds F32Backward<kD, 1>.
template <int kD>
__device__ __forceinline__ void backward_dq_block(unsigned char* smem, const float* qkv,
                                                  const int32_t* mask, const float* out,
                                                  const float* dout, const float* lse, float* dqkv,
                                                  const FlashParams& fp, int bh, int q_tile) {
  using L = flash_layout::F32Backward<kD, 1>;
  constexpr int kBr = L::kBr, kBc = L::kBc;
  float* q = reinterpret_cast<float*>(smem + L::kQ);
  float* g = reinterpret_cast<float*>(smem + L::kDout);
  float* k = reinterpret_cast<float*>(smem + L::kK);
  float* v = reinterpret_cast<float*>(smem + L::kV);
  float* s = reinterpret_cast<float*>(smem + L::kS);
  float* dp = reinterpret_cast<float*>(smem + L::kDp);
  const float* ds = dp;  // written over dPd by probs_and_grad_tile
  float* dq = reinterpret_cast<float*>(smem + L::kAcc);
  float* row_lse = reinterpret_cast<float*>(smem + L::kRowStats);
  float* row_d = row_lse + kBr;

  const int b = bh / fp.heads, head = bh % fp.heads;
  const int i0 = q_tile * kBr;
  const int64_t ld = 3 * static_cast<int64_t>(fp.h);
  const float* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const float* g_src = dout + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;

  load_tile<kBr, kD>(q, q_src, ld, i0, fp);
  load_tile<kBr, kD>(g, g_src, fp.h, i0, fp);
  row_stats<kBr>(row_lse, row_d, lse, out, dout, b, head, bh, i0, fp);
  zero_f32<kBr, kD>(dq, L::kLdA);
  for (int j0 = 0; j0 < fp.t; j0 += kBc) {
    __syncthreads();  // the previous key tile's K and dS are no longer read
    load_tile<kBc, kD>(k, q_src + fp.h, ld, j0, fp);
    load_tile<kBc, kD>(v, q_src + 2 * fp.h, ld, j0, fp);
    __syncthreads();
    block_mma<kBr, kBc, kD, false, true>(q, L::kLdT, k, L::kLdT, s, L::kLdS, false);
    block_mma<kBr, kBc, kD, false, true>(g, L::kLdT, v, L::kLdT, dp, L::kLdS, false);
    __syncthreads();
    probs_and_grad_tile<kBr, kBc, false>(s, dp, row_lse, row_d, real, bh, i0, j0, fp);
    __syncthreads();
    block_mma<kBr, kD, kBc, false, false>(ds, L::kLdP, k, L::kLdT, dq, L::kLdA, true);
  }
  __syncthreads();
  float* dq_rows = dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  for (int idx = threadIdx.x; idx < kBr * kD; idx += blockDim.x) {
    const int r = idx / kD, c = idx % kD;
    if (i0 + r < fp.t && c < fp.d) {
      dq_rows[(i0 + r) * ld + c] = dq[r * L::kLdA + c] * fp.scale;
    }
  }
}

// The backward, one launch (flash_backward_grid): each block runs one role. No block reads what
// another writes, so the roles run in any order. kStoreDs (kFlashDsGemm): the grid holds dK, dV
// blocks only, which also write dS into `ds` (null otherwise).
template <int kD, bool kStoreDs>
__global__ void __launch_bounds__(kThreads)
    flash_backward_kernel(const float* qkv, const int32_t* mask, const float* out,
                          const float* dout, const float* lse, float* dqkv, float* ds,
                          FlashParams fp, int kv_tiles) {
  fp.rng = fp.rng.resolved();  // the step may live in device memory (engine/philox.h)
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

}  // namespace

FlashParams flash_params(const Tensor& qkv, const AttentionArgs& args, const Tensor& keep,
                         std::initializer_list<const void*> loaded) {
  const int64_t h = qkv.dim(2) / 3, d = h / args.heads;
  ELECTRA_CHECK(qkv.dim(0) * args.heads <= 65535,
                "attention (flash): B * heads = ", qkv.dim(0) * args.heads,
                " exceeds the grid's y dimension");
  // The bf16 kernels address a row of a sequence by a 32-bit offset (load_tile), computed for
  // every row of a tile, up to 127 rows past T.
  ELECTRA_CHECK((qkv.dim(1) + 128) * qkv.dim(2) < (int64_t{1} << 31),
                "attention (flash): (T + 128) x 3H = ", (qkv.dim(1) + 128) * qkv.dim(2),
                " exceeds the kernels' 32-bit offsets");
  // AttentionForward / AttentionBackward checked the shape: the bf16 kernels get it, the f32 ones
  // none.
  const bool bf16 = qkv.dtype == DType::BF16;
  ELECTRA_CHECK(bf16 == (keep.data != nullptr) || qkv.numel() == 0, "attention (flash): keep bits ",
                keep.str(), " for ", dtype_name(qkv.dtype), " activations");
  return FlashParams{static_cast<int>(qkv.dim(1)),
                     static_cast<int>(h),
                     static_cast<int>(args.heads),
                     static_cast<int>(d),
                     1.0f / std::sqrt(static_cast<float>(d)),
                     args.dropout_p,
                     1.0f / (1.0f - args.dropout_p),
                     attention_keep_threshold(args.dropout_p),
                     args.rng,
                     dropout_site_offset(args.site),
                     vectorizable(d, loaded),
                     static_cast<uint32_t*>(keep.data)};
}

void flash_attention_forward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                             const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                             const Tensor& keep) {
  const FlashParams fp = flash_params(qkv, args, keep, {qkv.data, out.data});
  if (qkv.dtype == DType::BF16) {
    flash_forward_bf16(ctx, fp, qkv, mask, lse, out);
    return;
  }
  check_dtype(qkv, DType::F32, "attention (flash): qkv");
  with_tile_width(fp.d, [&](auto width) {
    constexpr int kD = decltype(width)::value;
    flash_launch(ctx, flash_forward_kernel<kD>, kThreads,
                 flash_forward_grid(fp, qkv.dim(0) * args.heads, DType::F32),
                 flash_launch_bytes(FlashLaunch::kForward, DType::F32, fp.d), qkv.ptr<float>(),
                 mask.ptr<int32_t>(), out.ptr<float>(), lse.ptr<float>(), fp);
  });
}

void flash_attention_backward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                              const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                              const Tensor& dout, const Tensor& keep, const Tensor& dqkv,
                              const Tensor* ds) {
  const FlashParams fp = flash_params(qkv, args, keep, {qkv.data, dout.data, out.data, dqkv.data});
  if (ds != nullptr) check_dtype(*ds, qkv.dtype, "attention (flash): dS");
  if (qkv.dtype == DType::BF16) {
    flash_backward_bf16(ctx, fp, qkv, mask, lse, out, dout, dqkv, ds);
    return;
  }
  check_dtype(qkv, DType::F32, "attention (flash): qkv");
  const FlashLaunch launch = ds != nullptr ? FlashLaunch::kBackwardDkDv : FlashLaunch::kBackward;
  const FlashBackwardGrid tiles = flash_backward_tiles(fp, DType::F32, launch);
  const auto run = [&](auto kernel) {
    flash_launch(ctx, kernel, kThreads, flash_backward_grid(tiles, qkv.dim(0) * args.heads),
                 flash_launch_bytes(launch, DType::F32, fp.d), qkv.ptr<float>(),
                 mask.ptr<int32_t>(), out.ptr<float>(), dout.ptr<float>(), lse.ptr<float>(),
                 dqkv.ptr<float>(), ds != nullptr ? ds->ptr<float>() : nullptr, fp, tiles.kv_tiles);
  };
  with_backward_kernel(fp.d, ds != nullptr, [&](auto width, auto store_ds) {
    run(flash_backward_kernel<decltype(width)::value, decltype(store_ds)::value>);
  });
}

}  // namespace electra::cuda
