// The pieces shared by the fused narrow-row kernels that end in a residual LayerNorm
// (kernels/ffn_forward.cu, kernels/output_layernorm.cu) or start with its backward
// (kernels/ffn_backward.cu): cp.async staging of row-major bf16 rows into padded shared-memory
// rows, a row's sum over its quad of lanes, and the epilogue that turns a warp's 16 x H f32 GEMM
// result (mma.sync C fragments) into o = bf16(acc + b), sum = bf16(dropout(o) + residual) and y =
// LayerNorm(sum) with a row's H values in the 4 lanes of a quad.
//
// The roundings are those of the unfused GPU path (cuBLASLt's bias epilogue rounding o once, then
// kernels/layernorm.cu's residual_layernorm_forward): o and sum in bf16, the statistics in f32 by
// two-pass variance, y rounded once. Only the order of the row sums differs: each lane adds its
// H / 4 values in registers and 2 shuffles complete the row.
#pragma once

#include <string>

#include "engine/str.h"
#include "kernels/attention_flash_mma.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/dispatch.h"
#include "kernels/dropout.h"
#include "kernels/dropout_mask.h"

namespace electra::cuda::layernorm_quad {

using bf16 = __nv_bfloat16;

// rows x cols bf16 from global (row-major, dense) into shared memory rows of `ld`, 16 bytes per
// cp.async; rows >= valid are zero-filled.
__device__ __forceinline__ void stage_rows(bf16* dst, int ld, const bf16* src, int rows, int cols,
                                           int64_t valid) {
  const int per_row = cols / 8;
  for (int i = threadIdx.x; i < rows * per_row; i += blockDim.x) {
    const int r = i / per_row, c = i % per_row * 8;
    const bool ok = r < valid;
    flash_mma::cp_async16(dst + r * ld + c, ok ? src + static_cast<int64_t>(r) * cols + c : src,
                          ok);
  }
}

__device__ __forceinline__ void store2(bf16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

__device__ __forceinline__ float round_bf16(float v) {
  return __bfloat162float(__float2bfloat16_rn(v));
}

// The sum of v over the 4 lanes of this lane's quad (the lanes that hold one row of an mma.sync C
// tile): 2 shuffles, the same order in every lane.
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// What the epilogue reads and writes: b [H] (the bf16 compute copy: cuBLASLt's bias epilogue
// reads a bias of the output's type), gamma, beta [H] f32; sum, y [n, H] bf16; mean, rstd [n].
struct Epilogue {
  const bf16* bias;
  const float *gamma, *beta;
  bf16 *sum, *y;
  float *mean, *rstd;
  int64_t n;
  DropoutSite site;
  float scale, eps;
};

inline bf16* bf16_ptr(const Tensor& t) {
  return static_cast<bf16*>(t.data);
}

// Throws naming op `name` (host side) unless the tensors a fused kernel stages by cp.async
// (`staged`) are bf16 and 16-byte aligned and those it reads or writes as bf16 pairs (`pairs`)
// are bf16 and 4-byte aligned.
inline void check_bf16_access(const char* name, std::initializer_list<const Tensor*> staged,
                              std::initializer_list<const Tensor*> pairs) {
  const std::string bf16_only = str_cat(name, " (cuda, bf16 only)");
  for (const Tensor* t : staged) {
    check_dtype(*t, DType::BF16, bf16_only.c_str());
    ELECTRA_CHECK(is_aligned16(t->data), name, " (cuda): ", t->str(),
                  " must be 16-byte aligned (cp.async)");
  }
  for (const Tensor* t : pairs) {
    check_dtype(*t, DType::BF16, bf16_only.c_str());
    ELECTRA_CHECK(reinterpret_cast<uintptr_t>(t->data) % 4 == 0, name, " (cuda): ", t->str(),
                  " must be 4-byte aligned (bf16 pairs)");
  }
}

// The epilogue's arguments for op `name` (host side), checking what the kernel assumes of them:
// bias, sum and y bf16, the others f32; sum and y 4-byte aligned (bf16 pairs).
inline Epilogue epilogue_args(const char* name, const Tensor& bias, const Tensor& gamma,
                              const Tensor& beta, const Tensor& sum, const Tensor& y,
                              const Tensor& mean, const Tensor& rstd, const DropoutSite& site,
                              float eps) {
  check_bf16_access(name, {}, {&sum, &y});
  check_dtype(bias, DType::BF16, str_cat(name, " (cuda, bf16 only)").c_str());
  for (const Tensor* t : {&gamma, &beta, &mean, &rstd}) check_dtype(*t, DType::F32, name);
  return Epilogue{.bias = bf16_ptr(bias),
                  .gamma = gamma.ptr<float>(),
                  .beta = beta.ptr<float>(),
                  .sum = bf16_ptr(sum),
                  .y = bf16_ptr(y),
                  .mean = mean.ptr<float>(),
                  .rstd = rstd.ptr<float>(),
                  .n = sum.dim(0),
                  .site = site,
                  .scale = 1.0f / (1.0f - site.p),
                  .eps = eps};
}

// The epilogue of one warp over its 16 rows. acc: the C fragments of o - b (f32, [16 x H]);
// res: the warp's 16 residual rows in shared memory (ld elements); rows: the global rows of this
// lane's fragment elements 0, 1 and 2, 3 (lane / 4 and lane / 4 + 8 of the warp's rows); rows
// >= n are computed but not stored. acc is left holding sum.
template <int kH>
__device__ __forceinline__ void bias_dropout_residual_layernorm(float (&acc)[kH / 8][4],
                                                                const Epilogue& p, const bf16* res,
                                                                int ld, const int64_t (&rows)[2],
                                                                int lane) {
  DropoutSite site = p.site;
  site.stream = site.stream.resolved();  // the step may live in device memory (engine/philox.h)
  const int r_lo = lane / 4, col = 2 * (lane % 4);
  // o, the dropout, the residual and the stored sum; the row sums of this lane's H / 4 columns.
  float row_sum[2] = {0, 0};
#pragma unroll
  for (int t = 0; t < kH / 8; ++t) {
    const int c = 8 * t + col;
    const float bias0 = __bfloat162float(p.bias[c]), bias1 = __bfloat162float(p.bias[c + 1]);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float* const v = acc[t] + 2 * half;
      // Elements c, c + 1 (c even, the models' site offsets multiples of 4: one Philox block;
      // the words of dropout_keep4 past them are unused, dead code).
      const uint32_t keep =
          site.p > 0 ? dropout_keep4(site.stream, site.offset + rows[half] * kH + c, site.p) : 3u;
      const bool k0 = keep & 1u, k1 = (keep >> 1) & 1u;
      const bf16* const r = res + (r_lo + 8 * half) * ld + c;
      // No FMA: the scaled survivor is rounded before the add, as in the unfused kernel.
      v[0] = round_bf16((k0 ? mul_rn(round_bf16(v[0] + bias0), p.scale) : 0.0f) +
                        __bfloat162float(r[0]));
      v[1] = round_bf16((k1 ? mul_rn(round_bf16(v[1] + bias1), p.scale) : 0.0f) +
                        __bfloat162float(r[1]));
      if (rows[half] < p.n) store2(p.sum + rows[half] * kH + c, v[0], v[1]);
      row_sum[half] += v[0] + v[1];
    }
  }
  // The quad's lanes hold a row's H columns: 2 shuffles complete each row's sums.
  float mu[2], rs[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    mu[half] = quad_sum(row_sum[half]) / static_cast<float>(kH);
    float sq = 0;
#pragma unroll
    for (int t = 0; t < kH / 8; ++t) {
      for (int e = 0; e < 2; ++e) {
        const float d = acc[t][2 * half + e] - mu[half];
        sq += d * d;
      }
    }
    rs[half] = 1.0f / sqrtf(quad_sum(sq) / static_cast<float>(kH) + p.eps);
    if (lane % 4 == 0 && rows[half] < p.n) {
      p.mean[rows[half]] = mu[half];
      p.rstd[rows[half]] = rs[half];
    }
  }
#pragma unroll
  for (int t = 0; t < kH / 8; ++t) {
    const int c = 8 * t + col;
    const float g0 = p.gamma[c], g1 = p.gamma[c + 1], be0 = p.beta[c], be1 = p.beta[c + 1];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float* const v = acc[t] + 2 * half;
      if (rows[half] < p.n) {
        store2(p.y + rows[half] * kH + c, (v[0] - mu[half]) * rs[half] * g0 + be0,
               (v[1] - mu[half]) * rs[half] * g1 + be1);
      }
    }
  }
}

}  // namespace electra::cuda::layernorm_quad
