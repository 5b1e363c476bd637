// attention on the GPU, version 2: FlashAttention-2 style fused kernels (Dao, 2023) for T <= 512
// and head dim d <= 128. Tiles are sized for kD = 32, 64 or 128 columns; a smaller d is zero-padded
// in shared memory, which adds nothing to any dot product.
//
// Forward, one block per (query tile of kBr rows, b * heads + h): the Q tile stays in shared
// memory; for each tile of kBc keys, K and V are loaded, S = Q K^T / sqrt(d), then per row an
// online softmax (running max m and sum l in f32):
//   m' = max(m, max_j S_ij),  l' = l exp(m - m') + sum_j exp(S_ij - m'),
//   O' = O exp(m - m') + Pd V,  Pd_ij = exp(S_ij - m') keep_ij / (1 - p)
// and at the end out = O / l and L = m + log l are written. O lives in f32 shared memory.
//
// Backward, three kernels, none with atomics (deterministic):
//   D_i = <dout_i, out_i> (= sum_k P_ik dP_ik), one warp per row;
//   dK, dV: one block per (key tile, b * heads + h), looping over the query tiles:
//     P = exp(S - L), dV += Pd^T dout, dPd = dout V^T, dS = P (dPd keep / (1 - p) - D),
//     dK += dS^T Q / sqrt(d);
//   dQ: one block per (query tile, b * heads + h), looping over the key tiles: dQ += dS K / sqrt(d)
//     (it recomputes S and dPd rather than share dS with the dK, dV blocks through atomics).
//
// Tile products: bf16 operands on tensor cores (WMMA m16n16k16, f32 accumulation, every operand
// and accumulator in shared memory); f32 operands by FMA loops (the parity mode: exact f32 sums,
// speed secondary). Dropout: keep_ij = dropout_keep(rng, site + ((b * heads + h) * T + i) * T + j,
// p), the Philox mask of version 1 and the CPU reference, regenerated wherever P is recomputed:
// one Philox block (10 rounds) gives the bits of 4 consecutive keys (dropout_keep4; two blocks
// when T % 4 != 0 puts a group across a block boundary). Shared-memory layouts and tile sizes:
// kernels/attention_flash_layout.h.
#include <mma.h>

#include <cmath>
#include <type_traits>

#include "kernels/attention_flash.h"
#include "kernels/attention_flash_layout.h"
#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"

namespace electra::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * kWarpSize;
using flash_layout::f32_ld;
using flash_layout::operand_ld;

template <class T, int kD, int kBr, int kBc>
using ForwardLayout = flash_layout::Forward<sizeof(T), kD, kBr, kBc>;
template <class T, int kD, int kBr, int kBc, int kAccRows, int kAccs>
using BackwardLayout = flash_layout::Backward<sizeof(T), kD, kBr, kBc, kAccRows, kAccs>;

struct FlashParams {
  int t, h, heads, d;  // sequence length, hidden, heads, head dim
  float scale;         // 1 / sqrt(d)
  float p, keep_scale;
  RngStream rng;
  uint64_t site;  // dropout_site_offset(args.site)
  bool vec;       // tiles may be loaded as 16-byte packs (d % 8 == 0, pointers aligned)
};

// Rows [row0, row0 + kRows) of one head (d columns from `src`, row stride ld) into the tile
// [kRows][operand_ld(kD)], zero past T and past d.
template <class T, int kRows, int kD>
__device__ void load_tile(T* tile, const T* src, int64_t ld, int row0, const FlashParams& fp) {
  constexpr int kLd = operand_ld(kD);
  if (fp.vec) {
    constexpr int kPack = Pack<T>::kSize, kChunks = kD / kPack;
    for (int idx = threadIdx.x; idx < kRows * kChunks; idx += blockDim.x) {
      const int r = idx / kChunks, c = idx % kChunks * kPack;
      Pack<T> pack;
      if (row0 + r < fp.t && c < fp.d) {
        pack = load_pack(src + (row0 + r) * ld + c);
      } else {
        for (int e = 0; e < kPack; ++e) pack.v[e] = from_float<T>(0.0f);
      }
      store_pack(tile + r * kLd + c, pack);
    }
  } else {
    for (int idx = threadIdx.x; idx < kRows * kD; idx += blockDim.x) {
      const int r = idx / kD, c = idx % kD;
      tile[r * kLd + c] =
          row0 + r < fp.t && c < fp.d ? src[(row0 + r) * ld + c] : from_float<T>(0.0f);
    }
  }
}

template <int kRows, int kCols>
__device__ void zero_f32(float* tile, int ld) {
  for (int idx = threadIdx.x; idx < kRows * kCols; idx += blockDim.x) {
    tile[idx / kCols * ld + idx % kCols] = 0.0f;
  }
}

// C[kM][kN] (f32, ldc) = (accumulate ? C : 0) + A B over kK, every operand in shared memory.
// A is [kM][kK] (lda), or stored transposed as [kK][kM] when kTransA; B is [kK][kN] (ldb), or
// stored transposed as [kN][kK] when kTransB. bf16: 16x16 output tiles spread over the warps, each
// a chain of WMMA m16n16k16 products; f32: one thread per output element, k in order. The caller
// synchronises before (operands written) and after (C read).
template <int kM, int kN, int kK, bool kTransA, bool kTransB, class T>
__device__ void block_mma(const T* a, int lda, const T* b, int ldb, float* c, int ldc,
                          bool accumulate) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    namespace wmma = nvcuda::wmma;
    using LayoutA = std::conditional_t<kTransA, wmma::col_major, wmma::row_major>;
    using LayoutB = std::conditional_t<kTransB, wmma::col_major, wmma::row_major>;
    static_assert(kM % 16 == 0 && kN % 16 == 0 && kK % 16 == 0, "WMMA tiles are 16x16x16");
    constexpr int kTilesN = kN / 16;
    for (int tile = threadIdx.x / kWarpSize; tile < kM / 16 * kTilesN; tile += kWarps) {
      const int m0 = tile / kTilesN * 16, n0 = tile % kTilesN * 16;
      float* cp = c + m0 * ldc + n0;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      if (accumulate) {
        wmma::load_matrix_sync(acc, cp, ldc, wmma::mem_row_major);
      } else {
        wmma::fill_fragment(acc, 0.0f);
      }
      for (int k0 = 0; k0 < kK; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, LayoutA> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, LayoutB> fb;
        wmma::load_matrix_sync(fa, kTransA ? a + k0 * lda + m0 : a + m0 * lda + k0, lda);
        wmma::load_matrix_sync(fb, kTransB ? b + n0 * ldb + k0 : b + k0 * ldb + n0, ldb);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(cp, acc, ldc, wmma::mem_row_major);
    }
  } else {
    for (int idx = threadIdx.x; idx < kM * kN; idx += blockDim.x) {
      const int m = idx / kN, n = idx % kN;
      float sum = accumulate ? c[m * ldc + n] : 0.0f;
      for (int k = 0; k < kK; ++k) {
        sum += (kTransA ? a[k * lda + m] : a[m * lda + k]) *
               (kTransB ? b[n * ldb + k] : b[k * ldb + n]);
      }
      c[m * ldc + n] = sum;
    }
  }
}

// Index of element (i, 0) of the dropout mask of head bh: site + (bh * T + i) * T.
__device__ __forceinline__ uint64_t mask_row(const FlashParams& fp, int bh, int i) {
  return fp.site + (static_cast<uint64_t>(bh) * fp.t + i) * fp.t;
}

// Whether one of keys j .. j + 3 is a real token (inside T and not padding).
__device__ __forceinline__ bool any_real_key(const int32_t* real, int j, int t) {
  bool any = false;
#pragma unroll
  for (int k = 0; k < 4; ++k) any = any || (j + k < t && real[j + k] != 0);
  return any;
}

// The keep bits of the [kBr][kBc] tile at (i0, j0), one byte per group of 4 keys:
// keep[r * kBc / 4 + c / 4] bit k = keep of (i0 + r, j0 + c + k). One Philox block per group;
// groups whose P is 0 anyway (rows past T, no real key) are not drawn.
template <int kBr, int kBc>
__device__ void dropout_keep_tile(uint8_t* keep, const int32_t* real, int bh, int i0, int j0,
                                  const FlashParams& fp) {
  constexpr int kGroups = kBc / 4;
  for (int g = threadIdx.x; g < kBr * kGroups; g += blockDim.x) {
    const int i = i0 + g / kGroups, j = j0 + g % kGroups * 4;
    keep[g] = i < fp.t && any_real_key(real, j, fp.t)
                  ? static_cast<uint8_t>(dropout_keep4(fp.rng, mask_row(fp, bh, i) + j, fp.p))
                  : uint8_t{0xF};
  }
}

template <class T, int kD, int kBr, int kBc>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(const T* qkv, const int32_t* mask, T* out, float* lse, FlashParams fp) {
  fp.rng = fp.rng.resolved();  // the step may live in device memory (engine/philox.h)
  using L = ForwardLayout<T, kD, kBr, kBc>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* q = reinterpret_cast<T*>(smem + L::kQ);
  T* k = reinterpret_cast<T*>(smem + L::kK);
  T* v = reinterpret_cast<T*>(smem + L::kV);
  float* s = reinterpret_cast<float*>(smem + L::kS);
  T* pd = reinterpret_cast<T*>(smem + L::kP);
  float* o = reinterpret_cast<float*>(smem + L::kO);
  uint8_t* keep_bits = smem + L::kKeep;
  float* row_max = reinterpret_cast<float*>(smem + L::kStats);
  float* row_sum = row_max + kBr;
  float* factor = row_sum + kBr;  // exp(m - m') of the current key tile

  const int bh = blockIdx.y, b = bh / fp.heads, head = bh % fp.heads;
  const int i0 = blockIdx.x * kBr;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t ld = 3 * static_cast<int64_t>(fp.h);
  const T* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;

  load_tile<T, kBr, kD>(q, q_src, ld, i0, fp);
  zero_f32<kBr, kD>(o, L::kLdO);
  for (int r = threadIdx.x; r < kBr; r += blockDim.x) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
  }
  for (int j0 = 0; j0 < fp.t; j0 += kBc) {
    __syncthreads();  // the previous key tile's K, V and Pd are no longer read
    load_tile<T, kBc, kD>(k, q_src + fp.h, ld, j0, fp);
    load_tile<T, kBc, kD>(v, q_src + 2 * fp.h, ld, j0, fp);
    if (fp.p > 0.0f) dropout_keep_tile<kBr, kBc>(keep_bits, real, bh, i0, j0, fp);
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
            fp.p == 0.0f || e == 0.0f || ((keep_bits[r * (kBc / 4) + c / 4] >> (c % 4)) & 1u) != 0;
        pd[r * L::kLdP + c] = from_float<T>(keep ? e * fp.keep_scale : 0.0f);
      }
      sum = warp_sum(sum);  // every lane has read row_max[r] before lane 0 rewrites it
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
  T* out_rows = out + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  for (int idx = threadIdx.x; idx < kBr * kD; idx += blockDim.x) {
    const int r = idx / kD, c = idx % kD;
    if (i0 + r < fp.t && c < fp.d) {
      const float l = row_sum[r];
      out_rows[static_cast<int64_t>(i0 + r) * fp.h + c] =
          from_float<T>(l > 0.0f ? o[r * L::kLdO + c] / l : 0.0f);
    }
  }
  for (int r = threadIdx.x; r < kBr; r += blockDim.x) {
    if (i0 + r < fp.t) {
      const float l = row_sum[r];
      lse[static_cast<int64_t>(bh) * fp.t + i0 + r] = l > 0.0f ? row_max[r] + logf(l) : INFINITY;
    }
  }
}

// D_i = <dout_i, out_i> over the d columns of the head, one warp per row (b * heads + h) * T + i.
template <class T>
__global__ void flash_backward_d_kernel(const T* out, const T* dout, float* d_rows, int64_t rows,
                                        FlashParams fp) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarps) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;
  const int64_t i = row % fp.t, bh = row / fp.t;
  const int64_t offset = (bh / fp.heads * fp.t + i) * fp.h + bh % fp.heads * fp.d;
  float sum = 0.0f;
  for (int c = lane; c < fp.d; c += kWarpSize) {
    sum += to_float(out[offset + c]) * to_float(dout[offset + c]);
  }
  sum = warp_sum(sum);
  if (lane == 0) d_rows[row] = sum;
}

// P, Pd and dS of one [kBr][kBc] tile (rows from i0, keys from j0) from the raw products
// S = Q K^T and dPd = dout V^T in f32:
//   P = exp(S / sqrt(d) - L_i) for real keys j < T and rows i < T, else 0 exactly;
//   Pd = P keep / (1 - p) (written over S when kWritePd);  dS = P (dPd keep / (1 - p) - D_i)
//   (written over dPd).
// Each thread takes groups of 4 consecutive keys of a row (one Philox block for their keep bits)
// and holds their values in registers: the whole block reads S and dPd, synchronises, then writes
// the 16-bit Pd and dS tiles over them (flash_layout::Backward).
template <class T, int kBr, int kBc, bool kWritePd>
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
        fp.p > 0.0f && any ? dropout_keep4(fp.rng, mask_row(fp, bh, i) + j, fp.p) : 0xFu;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const bool keep = fp.p == 0.0f || prob[e] == 0.0f || ((keep_bits >> e) & 1u) != 0;
      const float grad = keep ? dpd[e] * fp.keep_scale : 0.0f;
      pd_val[u][e] = keep ? prob[e] * fp.keep_scale : 0.0f;
      ds_val[u][e] = prob[e] * (grad - row_d[r]);
    }
  }
  __syncthreads();  // every S and dPd value is read: the 16-bit tiles may overwrite them
  T* pd = reinterpret_cast<T*>(s);
  T* ds = reinterpret_cast<T*>(dp);
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const int g = threadIdx.x + u * kThreads, r = g / kRowGroups, c = g % kRowGroups * 4;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (kWritePd) pd[r * kLdP + c + e] = from_float<T>(pd_val[u][e]);
      ds[r * kLdP + c + e] = from_float<T>(ds_val[u][e]);
    }
  }
}

// L and D of the rows [i0, i0 + kBr) into shared memory (+inf and 0 past T: P = 0 there).
template <int kBr>
__device__ void load_row_stats(const float* lse, const float* d_rows, float* row_lse, float* row_d,
                               int bh, int i0, const FlashParams& fp) {
  for (int r = threadIdx.x; r < kBr; r += blockDim.x) {
    const bool in = i0 + r < fp.t;
    const int64_t at = static_cast<int64_t>(bh) * fp.t + i0 + r;
    row_lse[r] = in ? lse[at] : INFINITY;
    row_d[r] = in ? d_rows[at] : 0.0f;
  }
}

template <class T, int kD, int kBr, int kBc>
using KeyTileLayout = BackwardLayout<T, kD, kBr, kBc, kBc, 2>;
template <class T, int kD, int kBr, int kBc>
using QueryTileLayout = BackwardLayout<T, kD, kBr, kBc, kBr, 1>;

// Minimum resident blocks per SM that the dK, dV kernel is compiled for (__launch_bounds__): 2 at
// d = 64 in bf16, where its 104.5 KiB of shared memory let two blocks share an sm_90 SM (at most
// 128 registers per thread); elsewhere shared memory or registers allow no more than before.
template <class T, int kD>
constexpr int kDkDvMinBlocks = std::is_same_v<T, __nv_bfloat16>&& kD == 64 ? 2 : 1;

// dK, dV of one key tile, looping over every query tile.
template <class T, int kD, int kBr, int kBc>
__global__ void __launch_bounds__(kThreads, kDkDvMinBlocks<T, kD>)
    flash_backward_dkdv_kernel(const T* qkv, const int32_t* mask, const T* dout, const float* lse,
                               const float* d_rows, T* dqkv, FlashParams fp) {
  fp.rng = fp.rng.resolved();  // the step may live in device memory (engine/philox.h)
  using L = KeyTileLayout<T, kD, kBr, kBc>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* q = reinterpret_cast<T*>(smem + L::kQ);
  T* g = reinterpret_cast<T*>(smem + L::kDout);
  T* k = reinterpret_cast<T*>(smem + L::kK);
  T* v = reinterpret_cast<T*>(smem + L::kV);
  float* s = reinterpret_cast<float*>(smem + L::kS);
  float* dp = reinterpret_cast<float*>(smem + L::kDp);
  const T* pd = reinterpret_cast<const T*>(s);   // written over S by probs_and_grad_tile
  const T* ds = reinterpret_cast<const T*>(dp);  // written over dPd
  float* dk = reinterpret_cast<float*>(smem + L::kAcc);
  float* dv = dk + kBc * L::kLdA;
  float* row_lse = reinterpret_cast<float*>(smem + L::kRowStats);
  float* row_d = row_lse + kBr;

  const int bh = blockIdx.y, b = bh / fp.heads, head = bh % fp.heads;
  const int j0 = blockIdx.x * kBc;
  const int64_t ld = 3 * static_cast<int64_t>(fp.h);
  const T* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const T* g_src = dout + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;

  load_tile<T, kBc, kD>(k, q_src + fp.h, ld, j0, fp);
  load_tile<T, kBc, kD>(v, q_src + 2 * fp.h, ld, j0, fp);
  zero_f32<kBc, kD>(dk, L::kLdA);
  zero_f32<kBc, kD>(dv, L::kLdA);
  for (int i0 = 0; i0 < fp.t; i0 += kBr) {
    __syncthreads();  // the previous query tile's Q, dout, Pd, dS, L, D are no longer read
    load_tile<T, kBr, kD>(q, q_src, ld, i0, fp);
    load_tile<T, kBr, kD>(g, g_src, fp.h, i0, fp);
    load_row_stats<kBr>(lse, d_rows, row_lse, row_d, bh, i0, fp);
    __syncthreads();
    block_mma<kBr, kBc, kD, false, true>(q, L::kLdT, k, L::kLdT, s, L::kLdS, false);
    block_mma<kBr, kBc, kD, false, true>(g, L::kLdT, v, L::kLdT, dp, L::kLdS, false);
    __syncthreads();
    probs_and_grad_tile<T, kBr, kBc, true>(s, dp, row_lse, row_d, real, bh, i0, j0, fp);
    __syncthreads();
    block_mma<kBc, kD, kBr, true, false>(pd, L::kLdP, g, L::kLdT, dv, L::kLdA, true);
    block_mma<kBc, kD, kBr, true, false>(ds, L::kLdP, q, L::kLdT, dk, L::kLdA, true);
  }
  __syncthreads();
  T* grad_rows = dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  for (int idx = threadIdx.x; idx < kBc * kD; idx += blockDim.x) {
    const int r = idx / kD, c = idx % kD;
    if (j0 + r < fp.t && c < fp.d) {
      T* row = grad_rows + (j0 + r) * ld;
      row[fp.h + c] = from_float<T>(dk[r * L::kLdA + c] * fp.scale);
      row[2 * fp.h + c] = from_float<T>(dv[r * L::kLdA + c]);
    }
  }
}

// dQ of one query tile, looping over every key tile.
template <class T, int kD, int kBr, int kBc>
__global__ void __launch_bounds__(kThreads)
    flash_backward_dq_kernel(const T* qkv, const int32_t* mask, const T* dout, const float* lse,
                             const float* d_rows, T* dqkv, FlashParams fp) {
  fp.rng = fp.rng.resolved();  // the step may live in device memory (engine/philox.h)
  using L = QueryTileLayout<T, kD, kBr, kBc>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* q = reinterpret_cast<T*>(smem + L::kQ);
  T* g = reinterpret_cast<T*>(smem + L::kDout);
  T* k = reinterpret_cast<T*>(smem + L::kK);
  T* v = reinterpret_cast<T*>(smem + L::kV);
  float* s = reinterpret_cast<float*>(smem + L::kS);
  float* dp = reinterpret_cast<float*>(smem + L::kDp);
  const T* ds = reinterpret_cast<const T*>(dp);  // written over dPd by probs_and_grad_tile
  float* dq = reinterpret_cast<float*>(smem + L::kAcc);
  float* row_lse = reinterpret_cast<float*>(smem + L::kRowStats);
  float* row_d = row_lse + kBr;

  const int bh = blockIdx.y, b = bh / fp.heads, head = bh % fp.heads;
  const int i0 = blockIdx.x * kBr;
  const int64_t ld = 3 * static_cast<int64_t>(fp.h);
  const T* q_src = qkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  const T* g_src = dout + static_cast<int64_t>(b) * fp.t * fp.h + head * fp.d;
  const int32_t* real = mask + static_cast<int64_t>(b) * fp.t;

  load_tile<T, kBr, kD>(q, q_src, ld, i0, fp);
  load_tile<T, kBr, kD>(g, g_src, fp.h, i0, fp);
  load_row_stats<kBr>(lse, d_rows, row_lse, row_d, bh, i0, fp);
  zero_f32<kBr, kD>(dq, L::kLdA);
  for (int j0 = 0; j0 < fp.t; j0 += kBc) {
    __syncthreads();  // the previous key tile's K and dS are no longer read
    load_tile<T, kBc, kD>(k, q_src + fp.h, ld, j0, fp);
    load_tile<T, kBc, kD>(v, q_src + 2 * fp.h, ld, j0, fp);
    __syncthreads();
    block_mma<kBr, kBc, kD, false, true>(q, L::kLdT, k, L::kLdT, s, L::kLdS, false);
    block_mma<kBr, kBc, kD, false, true>(g, L::kLdT, v, L::kLdT, dp, L::kLdS, false);
    __syncthreads();
    probs_and_grad_tile<T, kBr, kBc, false>(s, dp, row_lse, row_d, real, bh, i0, j0, fp);
    __syncthreads();
    block_mma<kBr, kD, kBc, false, false>(ds, L::kLdP, k, L::kLdT, dq, L::kLdA, true);
  }
  __syncthreads();
  T* dq_rows = dqkv + static_cast<int64_t>(b) * fp.t * ld + head * fp.d;
  for (int idx = threadIdx.x; idx < kBr * kD; idx += blockDim.x) {
    const int r = idx / kD, c = idx % kD;
    if (i0 + r < fp.t && c < fp.d) {
      dq_rows[(i0 + r) * ld + c] = from_float<T>(dq[r * L::kLdA + c] * fp.scale);
    }
  }
}

template <class T, int kD>
using Tiles = flash_layout::Tiles<sizeof(T), kD>;

FlashParams params_of(const Tensor& qkv, const AttentionArgs& args,
                      std::initializer_list<const void*> loaded) {
  const int64_t h = qkv.dim(2) / 3, d = h / args.heads;
  ELECTRA_CHECK(qkv.dim(0) * args.heads <= 65535,
                "attention (flash): B * heads = ", qkv.dim(0) * args.heads,
                " exceeds the grid's y dimension");
  return FlashParams{static_cast<int>(qkv.dim(1)),
                     static_cast<int>(h),
                     static_cast<int>(args.heads),
                     static_cast<int>(d),
                     1.0f / std::sqrt(static_cast<float>(d)),
                     args.dropout_p,
                     1.0f / (1.0f - args.dropout_p),
                     args.rng,
                     dropout_site_offset(args.site),
                     vectorizable(d, loaded)};
}

template <class T>
T* data_of(const Tensor& t) {
  return static_cast<T*>(t.data);
}

// Calls f(std::integral_constant<int, kD>{}) with kD = flash_tile_width(d).
template <class F>
void with_tile_width(int d, F&& f) {
  switch (flash_tile_width(d)) {
    case 32:
      f(std::integral_constant<int, 32>{});
      return;
    case 64:
      f(std::integral_constant<int, 64>{});
      return;
    default:
      f(std::integral_constant<int, 128>{});
  }
}

// Launches `kernel` on grid (tiles, B * heads) with `bytes` of dynamic shared memory, after
// raising the kernel's limit above the default 48 KiB.
template <class... KernelArgs, class... Args>
void launch(Context& ctx, void (*kernel)(KernelArgs...), int64_t tiles, int64_t heads_total,
            size_t bytes, Args&&... args) {
  ELECTRA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(heads_total)), kThreads, bytes,
           ctx.stream()>>>(std::forward<Args>(args)...);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void flash_attention_forward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                             const AttentionArgs& args, const Tensor& lse, const Tensor& out) {
  const FlashParams fp = params_of(qkv, args, {qkv.data});
  const int64_t heads_total = qkv.dim(0) * args.heads;
  dispatch_activation(qkv, "attention (flash)", [&](auto zero) {
    using T = decltype(zero);
    with_tile_width(fp.d, [&](auto width) {
      constexpr int kD = decltype(width)::value, kB = Tiles<T, kD>::kBig;
      static_assert(
          std::is_same_v<ForwardLayout<T, kD, kB, kB>, flash_layout::ForwardOf<sizeof(T), kD>>);
      launch(ctx, flash_forward_kernel<T, kD, kB, kB>, ceil_div(fp.t, kB), heads_total,
             flash_shared_bytes(FlashKernel::kForward, qkv.dtype, fp.d), data_of<T>(qkv),
             mask.ptr<int32_t>(), data_of<T>(out), lse.ptr<float>(), fp);
    });
  });
}

void flash_attention_backward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                              const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                              const Tensor& dout, const Tensor& d, const Tensor& dqkv) {
  const FlashParams fp = params_of(qkv, args, {qkv.data, dout.data});
  const int64_t heads_total = qkv.dim(0) * args.heads, rows = heads_total * fp.t;
  dispatch_activation(qkv, "attention (flash)", [&](auto zero) {
    using T = decltype(zero);
    flash_backward_d_kernel<T><<<ceil_div(rows, kWarps), kThreads, 0, ctx.stream()>>>(
        data_of<T>(out), data_of<T>(dout), d.ptr<float>(), rows, fp);
    ELECTRA_CUDA_CHECK_LAUNCH();
    with_tile_width(fp.d, [&](auto width) {
      constexpr int kD = decltype(width)::value, kB = Tiles<T, kD>::kBig;
      constexpr int kKeyBr = Tiles<T, kD>::kKeyTileBr;
      static_assert(
          std::is_same_v<KeyTileLayout<T, kD, kKeyBr, kB>, flash_layout::KeyTileOf<sizeof(T), kD>>);
      static_assert(
          std::is_same_v<QueryTileLayout<T, kD, kB, kB>, flash_layout::QueryTileOf<sizeof(T), kD>>);
      launch(ctx, flash_backward_dkdv_kernel<T, kD, kKeyBr, kB>, ceil_div(fp.t, kB), heads_total,
             flash_shared_bytes(FlashKernel::kBackwardDkDv, qkv.dtype, fp.d), data_of<T>(qkv),
             mask.ptr<int32_t>(), data_of<T>(dout), lse.ptr<float>(), d.ptr<float>(),
             data_of<T>(dqkv), fp);
      launch(ctx, flash_backward_dq_kernel<T, kD, kB, kB>, ceil_div(fp.t, kB), heads_total,
             flash_shared_bytes(FlashKernel::kBackwardDq, qkv.dtype, fp.d), data_of<T>(qkv),
             mask.ptr<int32_t>(), data_of<T>(dout), lse.ptr<float>(), d.ptr<float>(),
             data_of<T>(dqkv), fp);
    });
  });
}

}  // namespace electra::cuda
