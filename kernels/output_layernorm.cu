// output_layernorm kernel (kernels/output_layernorm.h): the attention output sublayer of a narrow
// encoder in one launch.
//
// A block of 4 warps owns 64 rows; warp w owns rows 16 w .. 16 w + 15 (the M of mma.sync
// m16n8k16). Shared memory holds W [H][K] and the block's x and residual rows in bf16, rows padded
// by 8 elements so that ldmatrix's 8 row addresses fall in distinct banks (27,648 bytes at
// H = K = 64, static; with the 1 KiB reserved per block and the registers below, 5 blocks an SM
// on an A100, 7 on an H100). W and x arrive in a first cp.async
// group, the residual in a second, which lands while the GEMM runs:
//   acc [16 x H] = x W^T (f32, K = 64: 4 k-steps of 8 n-tiles) in registers;
// then kernels/layernorm_quad.cuh's epilogue, as in ffn_forward: o = bf16(acc + b) (the unfused
// path's `sublayer`, cuBLASLt's bias epilogue rounding once), sum = bf16(keep ? o * scale : 0) +
// residual) with the dropout bits of kernels/dropout_mask.h at flat index r H + c (as
// residual_layernorm_forward), and the row's LayerNorm over the stored sum in a quad of lanes.
// Roundings are those of the unfused GPU path; sums differ in order only. Deterministic: no
// atomics, every output element written by one thread.
//
// ptxas -v (CUDA 13.0, the cuda preset's flags): sm_80 92 registers, sm_90 72; 27,648 bytes
// smem, 0 bytes stack frame, no spills on either.
#include "kernels/layernorm_quad.cuh"
#include "kernels/output_layernorm.h"

namespace electra::cuda {
namespace {

namespace fm = flash_mma;
using namespace layernorm_quad;

constexpr int kH = 64, kK = 64;
constexpr int kWarps = 4;
constexpr int kRows = 16 * kWarps;  // rows per block
constexpr int kLd = kK + 8;         // padded rows (bf16 elements) of W, x and the residual
static_assert(kH == kK, "W, x and the residual share one padded row length");

struct Params {
  const bf16 *x, *w, *residual;
  Epilogue out;  // b and the residual LayerNorm's tensors
};

__global__ void __launch_bounds__(kWarps* kWarpSize) output_layernorm_kernel(Params p) {
  __shared__ __align__(16) bf16 w[kH * kLd];
  __shared__ __align__(16) bf16 xs[kRows * kLd];
  __shared__ __align__(16) bf16 res[kRows * kLd];
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  stage_rows(w, kLd, p.w, kH, kK, kH);
  stage_rows(xs, kLd, p.x + row0 * kK, kRows, kK, p.out.n - row0);
  fm::cp_async_commit();
  stage_rows(res, kLd, p.residual + row0 * kH, kRows, kH, p.out.n - row0);
  fm::cp_async_commit();

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  // This lane's rows: C fragment elements 0, 1 and 2, 3.
  const int64_t rows[2] = {row0 + warp * 16 + lane / 4, row0 + warp * 16 + lane / 4 + 8};
  float acc[kH / 8][4] = {};
  fm::cp_async_wait<1>();
  __syncthreads();
  fm::mma_abt_smem<kK, kH>(acc, xs + warp * 16 * kLd, w, kLd, lane);
  fm::cp_async_wait<0>();
  __syncthreads();
  bias_dropout_residual_layernorm<kH>(acc, p.out, res + warp * 16 * kLd, kLd, rows, lane);
}

}  // namespace
}  // namespace electra::cuda

namespace electra {

void OutputLayerNormForward::cuda(Context& ctx) const {
  using cuda::layernorm_quad::bf16_ptr;
  cuda::layernorm_quad::check_bf16_access(kName, {&x, &w, &norm.residual}, {});
  const cuda::Params params{
      .x = bf16_ptr(x),
      .w = bf16_ptr(w),
      .residual = bf16_ptr(norm.residual),
      .out = cuda::layernorm_quad::epilogue_args(kName, b, norm.gamma, norm.beta, norm.sum, norm.y,
                                                 norm.mean, norm.rstd, norm.site, norm.eps)};
  const int64_t n = x.dim(0);
  if (n == 0) return;
  cuda::output_layernorm_kernel<<<static_cast<unsigned>(cuda::ceil_div(n, cuda::kRows)),
                                  cuda::kWarps * cuda::kWarpSize, 0, ctx.stream()>>>(params);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
