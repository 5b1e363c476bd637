// ffn_backward kernel (kernels/ffn_backward.h): the FFN block's backward of a narrow encoder in
// one launch, the mirror of kernels/ffn_forward.cu.
//
// A block of 4 warps owns 64 rows; warp w owns rows 16 w .. 16 w + 15 (the M of mma.sync
// m16n8k16), and a lane holds the C-fragment elements of rows lane / 4 and lane / 4 + 8 at columns
// 8 t + 2 (lane % 4) + {0, 1}: a row's H = 64 values in the 4 lanes of a quad. Shared memory holds
// W2 [H][F] and W1 [F][H] in bf16, rows padded by 8 elements (ldmatrix without bank conflicts),
// and the warps' column sums (77,824 bytes at H = 64, F = 256: two blocks fit an SM of A100 or
// H100). W2 arrives in a first cp.async group and W1 in a second while the LayerNorm runs.
//   1. The residual LayerNorm's backward per row, as kernels/layernorm.cu writes it (same
//      expressions, the row sums of g = dy gamma and g xhat in a quad: 3 adds and 2 shuffles):
//      d = rstd (g - mean(g) - xhat mean(g xhat)), grad_output = keep ? d scale : 0 with the
//      forward's dropout bits (kernels/dropout_mask.h, flat index r H + c), stored in bf16; d is
//      kept rounded to bf16 in registers (the unfused path stores it as dresidual).
//   2. F in chunks of 64 columns: GEMM A c [16 x 64] = grad_output W2[:, chunk] (A fragments from
//      grad_output's f32 C fragments, rounded to bf16 as stored), c rounded to bf16 (grad_act, the
//      unfused GEMM's bf16 output), grad_pre = grad_act gelu'(pre + b1) (kernels/gelu.cu's form),
//      stored in bf16; GEMM B acc [16 x H] += grad_pre W1[chunk, :], grad_pre's fragments made
//      from c in registers. grad_act never reaches memory.
//   3. dx = bf16(acc + d): cuBLASLt's beta = 1 epilogue on the stored dresidual.
// Column sums (dgamma += dy xhat, dbeta += dy, db2 += grad_output, db1 += grad_pre, each of the f32
// values before their bf16 rounding, as the unfused kernels add them): a lane adds its two rows,
// the 8 lanes of a column add by 3 shuffles, the 4 warps in warp order into the block's partial
// row [dgamma | dbeta | db2 | db1] (3 H + F floats), and the launch's last blocks add the partial
// rows in a fixed order (kernels/column_sum.cuh). Deterministic: no float atomics, every output
// element written by one thread.
#include "kernels/column_sum.cuh"
#include "kernels/ffn_backward.h"
#include "kernels/gelu_erfc.cuh"
#include "kernels/layernorm_quad.cuh"

namespace electra::cuda {
namespace {

namespace fm = flash_mma;
using namespace layernorm_quad;
using gelu_erfc::gelu_grad;

constexpr int kH = 64, kF = 4 * kH;
constexpr int kWarps = 4;
constexpr int kRows = 16 * kWarps;  // rows per block
static_assert(kRows == kFfnBackwardRows);
constexpr int kChunk = 64;       // F columns per step: c is 16 x 64, 32 floats a lane
constexpr int kHTiles = kH / 8;  // n-tiles of the H columns
constexpr int kCTiles = kChunk / 8;
constexpr int kLdW1 = kH + 8, kLdW2 = kF + 8;  // padded rows (bf16 elements)
constexpr int kWidth = 3 * kH + kF;            // a partial row: dgamma, dbeta, db2, db1

// Shared memory offsets in bf16 elements (each a multiple of 8: 16-byte aligned), then the warps'
// column sums in f32.
constexpr int kSmemW2 = 0;
constexpr int kSmemW1 = kSmemW2 + kH * kLdW2;
constexpr int kSmemSums = kSmemW1 + kF * kLdW1;
static_assert(kSmemSums % 8 == 0);
constexpr size_t kSmemBytes = sizeof(bf16) * kSmemSums + sizeof(float) * kWarps * kWidth;

struct Params {
  const bf16 *dy, *sum, *pre, *w1, *w2;
  const float *gamma, *mean, *rstd, *b1;
  bf16 *grad_output, *grad_pre, *dx;
  float *dgamma, *dbeta, *db2, *db1;
  ColumnTickets tickets;
  int64_t n;
  DropoutSite site;
  float scale;
};

// A bf16 pair as stored (4-byte aligned), unpacked when used.
__device__ __forceinline__ uint32_t load_pair(const bf16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

__device__ __forceinline__ float2 unpack(uint32_t v) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}

// The sum of v over the 8 lanes that hold one column of a C tile (lanes l, l + 4, ..., l + 28:
// its rows), the same fixed order in every lane.
__device__ __forceinline__ float column_lanes_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  return v + __shfl_xor_sync(0xffffffffu, v, 16);
}

// sums[c] = the warp's column sum of column c, from this lane's values at its two rows.
__device__ __forceinline__ void column_sum_to(float* sums, int c, float row_lo, float row_hi,
                                              int lane) {
  const float total = column_lanes_sum(row_lo + row_hi);
  if (lane < 4) sums[c] = total;
}

// acc[16 x 8 kN] += A B: flash_mma::mma_cb_smem with A (16 x kK) already rounded to bf16 and held
// as packed C-fragment pairs, a[t][half] = row lane / 4 + 8 half, columns 8 t + 2 (lane % 4) and
// + 1 (which are A-fragment registers as they stand: flash_layout::a_from_c), so that it costs 16
// registers instead of 32 floats; B stored [kK][8 kN] row-major (ld) in shared memory.
template <int kK, int kN>
__device__ __forceinline__ void mma_packed_b_smem(float (&acc)[kN / 8][4],
                                                  const uint32_t (&a)[kK / 8][2],
                                                  const bf16* b_tile, int ld, int lane) {
  const flash_layout::Coord lb = flash_layout::ldsm_bt(lane);
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    uint32_t frag[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const flash_layout::CToA at = flash_layout::a_from_c(r);
      frag[r] = a[2 * kk + at.tile][at.e / 2];
    }
#pragma unroll
    for (int np = 0; np < kN / 16; ++np) {
      uint32_t b[4];
      fm::ldmatrix_x4_trans(b, b_tile + (16 * kk + lb.row) * ld + 16 * np + lb.col);
      fm::mma(acc[2 * np], frag, b[0], b[1]);
      fm::mma(acc[2 * np + 1], frag, b[2], b[3]);
    }
  }
}

__global__ void __launch_bounds__(kWarps* kWarpSize) ffn_backward_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  bf16* const smem = reinterpret_cast<bf16*>(smem_raw);
  bf16* const w2 = smem + kSmemW2;
  bf16* const w1 = smem + kSmemW1;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  float* const sums = reinterpret_cast<float*>(smem + kSmemSums) + warp * kWidth;
  stage_rows(w2, kLdW2, p.w2, kH, kF, kH);
  fm::cp_async_commit();
  stage_rows(w1, kLdW1, p.w1, kF, kH, kF);
  fm::cp_async_commit();

  DropoutSite site = p.site;
  site.stream = site.stream.resolved();  // the step may live in device memory (engine/philox.h)
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int col = 2 * (lane % 4);
  const int64_t rows[2] = {row0 + warp * 16 + lane / 4, row0 + warp * 16 + lane / 4 + 8};
  const bool valid[2] = {rows[0] < p.n, rows[1] < p.n};

  // 1. The LayerNorm's backward. Rows past n read zeros (and mean = rstd = 0), so everything they
  // compute is 0 and adds nothing to the column sums. dy and sum stay packed bf16 pairs.
  uint32_t dy[kHTiles][2], x[kHTiles][2];
  float mu[2], rs[2], mean_g[2], mean_gx[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    mu[half] = valid[half] ? p.mean[rows[half]] : 0.0f;
    rs[half] = valid[half] ? p.rstd[rows[half]] : 0.0f;
    float sum_g = 0, sum_gx = 0;
#pragma unroll
    for (int t = 0; t < kHTiles; ++t) {
      const int64_t at = rows[half] * kH + 8 * t + col;
      dy[t][half] = valid[half] ? load_pair(p.dy + at) : 0u;
      x[t][half] = valid[half] ? load_pair(p.sum + at) : 0u;
      const float2 d = unpack(dy[t][half]), v = unpack(x[t][half]);
      const float g0 = p.gamma[8 * t + col], g1 = p.gamma[8 * t + col + 1];
      sum_g += d.x * g0;
      sum_gx += d.x * g0 * (v.x - mu[half]) * rs[half];
      sum_g += d.y * g1;
      sum_gx += d.y * g1 * (v.y - mu[half]) * rs[half];
    }
    mean_g[half] = quad_sum(sum_g) / static_cast<float>(kH);
    mean_gx[half] = quad_sum(sum_gx) / static_cast<float>(kH);
  }
  // grad_output (GEMM A's operand) and d, both rounded to bf16 pairs; the column sums of
  // dy xhat, dy and grad_output.
  uint32_t go[kHTiles][2], dres[kHTiles][2];
#pragma unroll
  for (int t = 0; t < kHTiles; ++t) {
    const int c = 8 * t + col;
    float dg[2][2], db[2][2], dgo[2][2];  // [half][e]
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      // Elements c, c + 1 (c even, the models' site offsets multiples of 4: one Philox block).
      const uint32_t keep =
          site.p > 0 ? dropout_keep4(site.stream, site.offset + rows[half] * kH + c, site.p) : 3u;
      const float2 dv = unpack(dy[t][half]), xv = unpack(x[t][half]);
      const float dys[2] = {dv.x, dv.y}, xs[2] = {xv.x, xv.y};
      float d[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float g = p.gamma[c + e], xhat = (xs[e] - mu[half]) * rs[half];
        dg[half][e] = dys[e] * (xs[e] - mu[half]) * rs[half];
        db[half][e] = dys[e];
        d[e] = rs[half] * (dys[e] * g - mean_g[half] - xhat * mean_gx[half]);
        dgo[half][e] = (keep >> e) & 1u ? d[e] * p.scale : 0.0f;
      }
      dres[t][half] = fm::pack_bf16(d[0], d[1]);
      go[t][half] = fm::pack_bf16(dgo[half][0], dgo[half][1]);
      if (valid[half]) {
        *reinterpret_cast<uint32_t*>(p.grad_output + rows[half] * kH + c) = go[t][half];
      }
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      column_sum_to(sums, c + e, dg[0][e], dg[1][e], lane);
      column_sum_to(sums, kH + c + e, db[0][e], db[1][e], lane);
      column_sum_to(sums, 2 * kH + c + e, dgo[0][e], dgo[1][e], lane);
    }
  }

  // 2. The chunks of F: grad_act, grad_pre and acc += grad_pre W1.
  float acc[kHTiles][4] = {};
  fm::cp_async_wait<1>();
  __syncthreads();
#pragma unroll 1
  for (int chunk = 0; chunk < kF / kChunk; ++chunk) {
    // pre of the chunk, loaded before GEMM A so that its latency hides behind the MMAs.
    uint32_t pre[kCTiles][2];
#pragma unroll
    for (int t = 0; t < kCTiles; ++t) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int64_t at = rows[half] * kF + chunk * kChunk + 8 * t + col;
        pre[t][half] = valid[half] ? load_pair(p.pre + at) : 0u;
      }
    }
    float c[kCTiles][4] = {};
    mma_packed_b_smem<kH, kChunk>(c, go, w2 + chunk * kChunk, kLdW2, lane);
#pragma unroll
    for (int t = 0; t < kCTiles; ++t) {
      const int f = chunk * kChunk + 8 * t + col;
      const float b0 = p.b1[f], b1 = p.b1[f + 1];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float* const v = c[t] + 2 * half;
        const float2 u = unpack(pre[t][half]);
        v[0] = round_bf16(v[0]) * gelu_grad(u.x + b0);
        v[1] = round_bf16(v[1]) * gelu_grad(u.y + b1);
        if (valid[half]) store2(p.grad_pre + rows[half] * kF + f, v[0], v[1]);
      }
#pragma unroll
      for (int e = 0; e < 2; ++e) column_sum_to(sums, 3 * kH + f + e, c[t][e], c[t][2 + e], lane);
    }
    if (chunk == 0) {
      fm::cp_async_wait<0>();
      __syncthreads();
    }
    fm::mma_cb_smem<kChunk, kH>(acc, c, w1 + chunk * kChunk * kLdW1, kLdW1, lane);
  }

  // 3. dx = bf16(acc + d).
#pragma unroll
  for (int t = 0; t < kHTiles; ++t) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      if (!valid[half]) continue;
      const float2 d = unpack(dres[t][half]);
      store2(p.dx + rows[half] * kH + 8 * t + col, acc[t][2 * half] + d.x,
             acc[t][2 * half + 1] + d.y);
    }
  }

  // The block's partial row: the warps' sums in warp order.
  __syncthreads();
  const float* const all = reinterpret_cast<const float*>(smem + kSmemSums);
  for (int i = threadIdx.x; i < kWidth; i += blockDim.x) {
    float total = all[i];
    for (int w = 1; w < kWarps; ++w) total += all[w * kWidth + i];
    p.tickets.partial[blockIdx.x * kWidth + i] = total;
  }
  finish_column_tile(p.tickets, blockIdx.x, 0, 0, kWidth, [&](int64_t i, float total) {
    if (i < kH) {
      p.dgamma[i] += total;
    } else if (i < 2 * kH) {
      p.dbeta[i - kH] += total;
    } else if (i < 3 * kH) {
      p.db2[i - 2 * kH] += total;
    } else {
      p.db1[i - 3 * kH] += total;
    }
  });
}

}  // namespace
}  // namespace electra::cuda

namespace electra {

void FfnBackward::cuda(Context& ctx) const {
  using cuda::layernorm_quad::bf16_ptr;
  cuda::layernorm_quad::check_bf16_access(
      kName, {&w1, &w2}, {&norm.dy, &norm.sum, &norm.dx, &norm.dresidual, &pre, &grad_pre});
  for (const Tensor* t :
       std::initializer_list<const Tensor*>{&norm.gamma, &norm.mean, &norm.rstd, &norm.dgamma,
                                            &norm.dbeta, &norm.dbias, &b1, &db1, &norm.workspace}) {
    check_dtype(*t, DType::F32, "ffn_backward (cuda, bf16 only)");
  }
  const int64_t n = norm.sum.dim(0);
  if (n == 0) return;
  const int64_t blocks = cuda::ceil_div(n, int64_t{cuda::kRows});
  ELECTRA_CHECK(norm.workspace.numel() >= ffn_backward_workspace_floats(n, cuda::kH, cuda::kF),
                kName, ": workspace ", norm.workspace.str(), " must hold at least ",
                ffn_backward_workspace_floats(n, cuda::kH, cuda::kF), " floats");
  const cuda::Params params{
      .dy = bf16_ptr(norm.dy),
      .sum = bf16_ptr(norm.sum),
      .pre = bf16_ptr(pre),
      .w1 = bf16_ptr(w1),
      .w2 = bf16_ptr(w2),
      .gamma = norm.gamma.ptr<float>(),
      .mean = norm.mean.ptr<float>(),
      .rstd = norm.rstd.ptr<float>(),
      .b1 = b1.ptr<float>(),
      .grad_output = bf16_ptr(norm.dx),
      .grad_pre = bf16_ptr(grad_pre),
      .dx = bf16_ptr(norm.dresidual),
      .dgamma = norm.dgamma.ptr<float>(),
      .dbeta = norm.dbeta.ptr<float>(),
      .db2 = norm.dbias.ptr<float>(),
      .db1 = db1.ptr<float>(),
      // One column tile of 3 H + F columns, summed in the order of a column sum that wide.
      .tickets = cuda::column_tickets(ctx, norm.workspace.ptr<float>(), blocks, cuda::kWidth,
                                      cuda::kWidth, 1),
      .n = n,
      .site = norm.site,
      .scale = 1.0f / (1.0f - norm.site.p)};
  // Above the 48 KB a kernel gets without opting in (a host-side attribute, not a launch).
  ELECTRA_CUDA_CHECK(cudaFuncSetAttribute(cuda::ffn_backward_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(cuda::kSmemBytes)));
  cuda::ffn_backward_kernel<<<static_cast<unsigned>(blocks), cuda::kWarps * cuda::kWarpSize,
                              cuda::kSmemBytes, ctx.stream()>>>(params);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
