// Tensor-core and asynchronous-copy primitives of the bf16 flash kernels
// (kernels/attention_flash_bf16.cu, kernels/attention_flash_short.cu), sm_80 and newer: mma.sync
// m16n8k16 (bf16 x bf16 + f32), ldmatrix x4 (plain and transposed) and cp.async of 16 bytes with
// zero fill. Which register holds which element: kernels/attention_flash_layout.h (mma_a, mma_b,
// mma_c, ldsm_*).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/attention_flash_layout.h"

namespace electra::cuda::flash_mma {

using flash_layout::Coord;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// D = A B + D: a[4] the A fragment (16 x 16), b0, b1 the B fragment (16 x 8), d[4] f32.
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8 x 8 matrices; `row` is this lane's row address (flash_layout::ldsm_*).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const __nv_bfloat16* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __nv_bfloat16* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row)));
}

// 16 bytes from global `src` to shared `dst`, or 16 zero bytes when !valid (src is then not
// read, but must still be a valid address).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Two f32 as the bf16 pair of one operand register (the first in the low 16 bits), rounded to
// nearest even like from_float<__nv_bfloat16>.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return static_cast<uint32_t>(__bfloat16_as_ushort(v.x)) |
         static_cast<uint32_t>(__bfloat16_as_ushort(v.y)) << 16;
}

// The A fragment of 16 x 16 tile `kk` (columns 16 kk ..) of a 16 x 8n C tile set held in
// registers (flash_layout::a_from_c).
template <int kTiles>
__device__ __forceinline__ void a_from_c(uint32_t (&a)[4], const float (&c)[kTiles][4], int kk) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const flash_layout::CToA at = flash_layout::a_from_c(r);
    a[r] = pack_bf16(c[2 * kk + at.tile][at.e], c[2 * kk + at.tile][at.e + 1]);
  }
}

// acc[16 x 8 kN] += A (16 x 16 k, fragments from `a_tile`: row-major, ld elements, 16 rows) times
// B^T where B is stored [8 kN][16 k] row-major (ld elements) in `b_tile`: the warp product
// A B^T of Q K^T. kK = 16 k.
template <int kK, int kN>
__device__ __forceinline__ void mma_abt_smem(float (&acc)[kN / 8][4], const __nv_bfloat16* a_tile,
                                             const __nv_bfloat16* b_tile, int ld, int lane) {
  const Coord la = flash_layout::ldsm_a(lane), lb = flash_layout::ldsm_b(lane);
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4(a, a_tile + la.row * ld + 16 * kk + la.col);
#pragma unroll
    for (int np = 0; np < kN / 16; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, b_tile + (16 * np + lb.row) * ld + 16 * kk + lb.col);
      mma(acc[2 * np], a, b[0], b[1]);
      mma(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// acc[16 x 8 kN] += A B for one k step of 16: A (16 x 16) the fragment `a`, B (16 x 8 kN) rows
// k0 .. k0 + 15 of a tile stored [k][8 kN] row-major (ld) in `b_tile`, read by ldmatrix.trans
// (lb = flash_layout::ldsm_bt(lane)).
template <int kN>
__device__ __forceinline__ void mma_ab_step(float (&acc)[kN / 8][4], const uint32_t (&a)[4],
                                            const __nv_bfloat16* b_tile, int k0, int ld, Coord lb) {
#pragma unroll
  for (int np = 0; np < kN / 16; ++np) {
    uint32_t b[4];
    ldmatrix_x4_trans(b, b_tile + (k0 + lb.row) * ld + 16 * np + lb.col);
    mma(acc[2 * np], a, b[0], b[1]);
    mma(acc[2 * np + 1], a, b[2], b[3]);
  }
}

// acc[16 x 8 kN] += P B where P (16 x kK) is a C tile set in registers (probabilities or dS,
// converted to bf16 A fragments) and B is stored [kK][8 kN] row-major (ld) in `b_tile`: P V,
// dS K, Pd^T dout, dS^T Q.
template <int kK, int kN>
__device__ __forceinline__ void mma_cb_smem(float (&acc)[kN / 8][4], const float (&p)[kK / 8][4],
                                            const __nv_bfloat16* b_tile, int ld, int lane) {
  const Coord lb = flash_layout::ldsm_bt(lane);
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    uint32_t a[4];
    a_from_c(a, p, kk);
    mma_ab_step<kN>(acc, a, b_tile, 16 * kk, ld, lb);
  }
}

// The same product with P already converted (a[kk] = a_from_c(P, kk), the same bf16 values): 32
// registers live instead of 64 where P must outlast a barrier (kFlashShort's forward).
template <int kK, int kN>
__device__ __forceinline__ void mma_ab_smem(float (&acc)[kN / 8][4],
                                            const uint32_t (&a)[kK / 16][4],
                                            const __nv_bfloat16* b_tile, int ld, int lane) {
  const Coord lb = flash_layout::ldsm_bt(lane);
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) mma_ab_step<kN>(acc, a[kk], b_tile, 16 * kk, ld, lb);
}

// One k step of 16: acc[16 x 8 kN] += A B where A (16 x 16) is stored transposed in `at_tile`,
// 16 rows of k by 16 columns of m (row stride lda), read as A fragments by ldmatrix.trans
// (flash_layout::ldsm_b's map), and B (16 x 8 kN) is stored [k][8 kN] row-major (ldb) in `b_tile`:
// kFlashShort's Pd^T dout and dS^T Q from Pd, dS stored [query][key].
template <int kN>
__device__ __forceinline__ void mma_atb_step(float (&acc)[kN / 8][4], const __nv_bfloat16* at_tile,
                                             int lda, const __nv_bfloat16* b_tile, int ldb,
                                             int lane) {
  const Coord la = flash_layout::ldsm_b(lane);  // [k][m]: the transposed A's rows are k
  uint32_t a[4];
  ldmatrix_x4_trans(a, at_tile + la.row * lda + la.col);
  mma_ab_step<kN>(acc, a, b_tile, 0, ldb, flash_layout::ldsm_bt(lane));
}

}  // namespace electra::cuda::flash_mma
