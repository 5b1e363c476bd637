// ffn_forward kernel (kernels/ffn_forward.h): the FFN block of a narrow encoder in one launch.
//
// A block of 4 warps owns 64 rows; warp w owns rows 16 w .. 16 w + 15 (the M of mma.sync
// m16n8k16). Shared memory holds W1 [F][H], W2 [H][F] and the block's x rows in bf16, rows padded
// by 8 elements so that ldmatrix's 8 row addresses fall in distinct banks (79,872 bytes at
// H = 64, F = 256: two blocks fit an SM of A100 or H100). W1 and x arrive in a first cp.async
// group, W2 in a second, which lands while GEMM 1 of the first chunk runs.
// The warp walks F in chunks of 64 columns:
//   GEMM 1: c1 [16 x 64] = x W1[chunk]^T (f32), rounded to bf16 and stored as pre;
//   u = pre + b1 in f32, act = gelu(u) (the erfc form of kernels/gelu.cu), stored in bf16;
//   GEMM 2: acc [16 x H] += act W2[:, chunk]^T, act's bf16 fragments made from c1 in registers.
// So pre and act never return from memory, and acc stays in registers across the chunks. Then
// per element: o = bf16(acc + b2) (the unfused path's `sublayer`, cuBLASLt's bias epilogue
// rounding once), sum = bf16(keep ? o * scale : 0) + x) with the dropout bits of
// kernels/dropout_mask.h at flat index r H + c (as residual_layernorm_forward), and the row's
// LayerNorm over the stored sum: a row's H values live in the 4 lanes of a quad (16 each), so its
// sums are 3 adds in registers and 2 shuffles. Two-pass variance, as kernels/layernorm.cu.
// Roundings are those of the unfused GPU path; sums differ in order only. Deterministic: no
// atomics, every output element written by one thread.
#include "kernels/ffn_forward.h"
#include "kernels/gelu_erfc.cuh"
#include "kernels/layernorm_quad.cuh"

namespace electra::cuda {
namespace {

namespace fm = flash_mma;
using namespace layernorm_quad;
using gelu_erfc::gelu;

constexpr int kH = 64, kF = 4 * kH;
constexpr int kWarps = 4;
constexpr int kRows = 16 * kWarps;  // rows per block
constexpr int kChunk = 64;          // F columns per step: c1 is 16 x 64, 32 floats a lane
constexpr int kHTiles = kH / 8;     // n-tiles of the H outputs
constexpr int kLdX = kH + 8, kLdW1 = kH + 8, kLdW2 = kF + 8;  // padded rows (bf16 elements)
static_assert(kLdX == kLdW1, "mma_abt_smem reads A and B with one leading dimension");

// Shared memory offsets in bf16 elements (each a multiple of 8: 16-byte aligned).
constexpr int kSmemW1 = 0;
constexpr int kSmemW2 = kSmemW1 + kF * kLdW1;
constexpr int kSmemX = kSmemW2 + kH * kLdW2;
constexpr size_t kSmemBytes = sizeof(bf16) * (kSmemX + kRows * kLdX);

// acc [16 x 8 kN] += A B^T, A the 16 x 16 kK operand made from the C fragments `c` (f32, rounded
// to bf16 by a_from_c), B stored [8 kN][16 kK] row-major (ld) in shared memory: act W2^T.
template <int kK, int kN>
__device__ __forceinline__ void mma_cbt_smem(float (&acc)[kN / 8][4], const float (&c)[kK / 8][4],
                                             const bf16* b_tile, int ld, int lane) {
  const flash_layout::Coord lb = flash_layout::ldsm_b(lane);
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    uint32_t a[4];
    fm::a_from_c(a, c, kk);
#pragma unroll
    for (int np = 0; np < kN / 16; ++np) {
      uint32_t b[4];
      fm::ldmatrix_x4(b, b_tile + (16 * np + lb.row) * ld + 16 * kk + lb.col);
      fm::mma(acc[2 * np], a, b[0], b[1]);
      fm::mma(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

struct Params {
  const bf16 *x, *w1, *w2;
  const float* b1;
  bf16 *pre, *act;
  Epilogue out;  // b2 and the residual LayerNorm's tensors
};

__global__ void __launch_bounds__(kWarps* kWarpSize) ffn_forward_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  bf16* const smem = reinterpret_cast<bf16*>(smem_raw);
  bf16* const w1 = smem + kSmemW1;
  bf16* const w2 = smem + kSmemW2;
  bf16* const xs = smem + kSmemX;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  stage_rows(w1, kLdW1, p.w1, kF, kH, kF);
  stage_rows(xs, kLdX, p.x + row0 * kH, kRows, kH, p.out.n - row0);
  fm::cp_async_commit();
  stage_rows(w2, kLdW2, p.w2, kH, kF, kH);
  fm::cp_async_commit();

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const bf16* const x_tile = xs + warp * 16 * kLdX;
  // This lane's rows (C fragment elements 0, 1 and 2, 3) and its first column in an 8-wide tile.
  const int r_lo = lane / 4, col = 2 * (lane % 4);
  const int64_t rows[2] = {row0 + warp * 16 + r_lo, row0 + warp * 16 + r_lo + 8};

  float acc[kHTiles][4] = {};
  fm::cp_async_wait<1>();
  __syncthreads();
#pragma unroll 1
  for (int chunk = 0; chunk < kF / kChunk; ++chunk) {
    float c1[kChunk / 8][4] = {};
    fm::mma_abt_smem<kH, kChunk>(c1, x_tile, w1 + chunk * kChunk * kLdW1, kLdX, lane);
#pragma unroll
    for (int t = 0; t < kChunk / 8; ++t) {
      const int f = chunk * kChunk + 8 * t + col;
      const float b0 = p.b1[f], b1 = p.b1[f + 1];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float* const v = c1[t] + 2 * half;
        v[0] = round_bf16(v[0]);
        v[1] = round_bf16(v[1]);
        if (rows[half] < p.out.n) store2(p.pre + rows[half] * kF + f, v[0], v[1]);
        v[0] = gelu(v[0] + b0);
        v[1] = gelu(v[1] + b1);
        if (rows[half] < p.out.n) store2(p.act + rows[half] * kF + f, v[0], v[1]);
      }
    }
    if (chunk == 0) {
      fm::cp_async_wait<0>();
      __syncthreads();
    }
    mma_cbt_smem<kChunk, kH>(acc, c1, w2 + chunk * kChunk, kLdW2, lane);
  }

  bias_dropout_residual_layernorm<kH>(acc, p.out, x_tile, kLdX, rows, lane);
}

}  // namespace
}  // namespace electra::cuda

namespace electra {

void FfnForward::cuda(Context& ctx) const {
  using cuda::layernorm_quad::bf16_ptr;
  cuda::layernorm_quad::check_bf16_access(kName, {&x, &w1, &w2}, {&pre, &act});
  check_dtype(b1, DType::F32, kName);
  const cuda::Params params{.x = bf16_ptr(x),
                            .w1 = bf16_ptr(w1),
                            .w2 = bf16_ptr(w2),
                            .b1 = b1.ptr<float>(),
                            .pre = bf16_ptr(pre),
                            .act = bf16_ptr(act),
                            .out = cuda::layernorm_quad::epilogue_args(kName, b2, gamma, beta, sum,
                                                                       y, mean, rstd, site, eps)};
  const int64_t n = x.dim(0);
  if (n == 0) return;
  // Above the 48 KB a kernel gets without opting in (a host-side attribute, not a launch).
  ELECTRA_CUDA_CHECK(cudaFuncSetAttribute(cuda::ffn_forward_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(cuda::kSmemBytes)));
  cuda::ffn_forward_kernel<<<static_cast<unsigned>(cuda::ceil_div(n, cuda::kRows)),
                             cuda::kWarps * cuda::kWarpSize, cuda::kSmemBytes, ctx.stream()>>>(
      params);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
