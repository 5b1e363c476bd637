// The f32 GEMM of the CPU path (matmul_cpu.cpp): C_i = alpha op(A_i) op(B_i) + beta C_i with
// packed panels and a register-blocked FMA micro-kernel (AVX-512, AVX2 + FMA, or scalar std::fma,
// whichever the build targets).
//
// Every element of C is one chain of fused multiply-adds in k order:
//   c = (beta == 0 ? 0 : beta * c_old);   for k = 0 .. K-1:  c = fma(alpha * a_ik, b_kj, c)
// (alpha * a_ik rounded to f32: exact for alpha = 1). Blocking over M, N and K only changes where
// the partial sum waits between blocks (registers, or C itself, in f32), never the operations, so
// C has the same bits at any thread count, any tiling and any vector width.
//
// op(B) of each matrix is packed once (shared by all tasks) into a buffer of the calling thread;
// each task (a block of rows x columns of C) packs its rows of op(A) per block of K into a buffer
// of its thread. Both buffers grow to the largest GEMM seen and are then reused: only the first
// update allocates.
#pragma once

#include <cstdint>

#include "kernels/matmul.h"

namespace electra::cpu {

// Called on a finished block of C_i (rows [r0, r0 + rows), columns [c0, c0 + cols)), by the task
// that computed it: the matmul epilogue.
struct GemmBlockDone {
  void (*fn)(const void* state, int64_t i, int64_t r0, int64_t rows, int64_t c0, int64_t cols);
  const void* state;
};

// g's A, B and alpha, beta, batch with the product written to `out` (g.c, or gelu_pre), f32.
void packed_gemm_f32(Context& ctx, const Gemm& g, const MatrixBatch& out, GemmBlockDone done);

}  // namespace electra::cpu
