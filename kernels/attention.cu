// attention on the GPU: the dispatch between the flash kernels (version 2, attention_flash.cu) and
// version 1, written here: strided-batched cuBLASLt GEMMs (through matmul_batched) around one fused
// scale-mask-softmax-dropout kernel (forward) and its backward; and kFlashDsGemm's dQ GEMMs on the
// dS its flash dK, dV blocks write. kFlashShort's forward and one-pass backward:
// attention_flash_short.cu.
//
// GEMM batching: matrix (b, h) of every operand sits at base + b * per_batch + h * per_head of its
// tensor (a head of Q is a [T, d] matrix with leading dimension 3H), so for a fixed head the
// batch over b has one stride, and for a fixed b the batch over heads has one stride. We loop over
// the shorter of the two and batch over the longer: min(B, heads) GEMM calls per product.
//
// Softmax kernels: one warp per row of T keys, three passes over the row (max, sum, write), which
// stays in L1 for T <= 512; f32 math, warp reductions in a fixed order (deterministic). The
// dropout mask is a pure function of (rng, site, element index), regenerated in the backward;
// every pass that needs it takes groups of 4 consecutive elements (one lane, or one thread), whose
// keep bits come from half a Philox block (attention_keep_bits<4> at dropout_mask.h's
// attention_mask_index: the two lanes of a block's 8 keys both draw it, so a warp draws as often
// as with the 24-bit mask's groups of 4), and none draws at p = 0.
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"
#include "kernels/matmul.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / kWarpSize;

// S (already scaled) -> P in place over `probs`, Pd = P * keep / (1 - p) into `pd` (skipped when
// pd is null, i.e. p == 0). Row r = (b * heads + h) * T + i covers keys j < T.
template <class T>
__global__ void softmax_dropout_forward_kernel(T* probs, T* pd, const int32_t* mask, int64_t rows,
                                               int t, int64_t rows_per_batch, RngStream rng,
                                               uint64_t site, float p, float keep_scale) {
  rng = rng.resolved();  // the step may live in device memory (engine/philox.h)
  const uint32_t threshold = attention_keep_threshold(p);
  const int64_t row = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;
  const uint64_t first = site + row * attention_mask_pitch(t);  // attention_mask_index
  const int32_t* m = mask + (row / rows_per_batch) * t;
  T* s = probs + row * t;
  float max = -INFINITY;
  for (int j = lane; j < t; j += kWarpSize) {
    if (m[j] != 0) max = fmaxf(max, to_float(s[j]));
  }
  max = warp_max(max);
  float sum = 0.0f;
  for (int j = lane; j < t; j += kWarpSize) {
    if (m[j] != 0) sum += expf(to_float(s[j]) - max);
  }
  sum = warp_sum(sum);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int j4 = 4 * lane; j4 < t; j4 += 4 * kWarpSize) {
    const uint32_t keep = pd != nullptr ? attention_keep_bits<4>(rng, first + j4, threshold) : 0xFu;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = j4 + e;
      if (j >= t) break;
      const float prob = m[j] != 0 ? expf(to_float(s[j]) - max) * inv : 0.0f;
      s[j] = from_float<T>(prob);
      if (pd != nullptr)
        pd[row * t + j] = from_float<T>((keep >> e) & 1u ? prob * keep_scale : 0.0f);
    }
  }
}

// Pd = P * keep / (1 - p), elementwise over [B, heads, T, T] (`rows` rows of T), 4 consecutive
// keys of a row per thread.
template <class T>
__global__ void dropout_probs_kernel(const T* probs, T* pd, int64_t rows, int t, RngStream rng,
                                     uint64_t site, float p, float keep_scale) {
  rng = rng.resolved();  // the step may live in device memory (engine/philox.h)
  const uint32_t threshold = attention_keep_threshold(p);
  const uint64_t pitch = attention_mask_pitch(t);
  const int groups = (t + 3) / 4;  // a row's groups of 4 keys
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < rows * groups;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = g / groups;
    const int j4 = static_cast<int>(g % groups) * 4;
    const uint32_t keep = attention_keep_bits<4>(rng, site + row * pitch + j4, threshold);
    const int64_t at = row * t + j4;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (j4 + e >= t) break;
      pd[at + e] = from_float<T>((keep >> e) & 1u ? to_float(probs[at + e]) * keep_scale : 0.0f);
    }
  }
}

// dPd (f32) -> dS (T) over `grad`: dP = dPd * keep / (1 - p), dS = P (dP - sum_k P_k dP_k), all
// in f32 (the subtraction cancels: attention.h). Row r of dPd is f32 elements r t .. r t + t - 1;
// dS row r is written as T from the first byte of the same row (for bf16 a row pitch of 2t
// elements, see ds_pitch). Each lane takes groups of 4 consecutive keys; the keep bits are drawn
// in both passes (nothing of size T is stored per lane) and not at all at p = 0 (keep_scale = 1
// then). The second pass goes over the row in chunks of 4 * 32 keys: all lanes read a chunk into
// registers, __syncwarp, then write it. The T values of chunk [c, c + 128) overlap the f32 values
// [c / 2, c / 2 + 64) of the row, which were all read in this chunk or an earlier one, so each
// read precedes the barrier that precedes the write over it (for f32 each lane rewrites only
// what it read itself).
template <class T>
__global__ void softmax_dropout_backward_kernel(const T* probs, float* grad, int64_t rows, int t,
                                                RngStream rng, uint64_t site, float p,
                                                float keep_scale) {
  rng = rng.resolved();  // the step may live in device memory (engine/philox.h)
  const uint32_t threshold = attention_keep_threshold(p);
  const int64_t row = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;  // the whole warp: `row` is the warp's
  const T* prob = probs + row * t;
  const float* g = grad + row * t;
  T* ds = reinterpret_cast<T*>(grad + row * t);
  const uint64_t first = site + row * attention_mask_pitch(t);  // attention_mask_index
  float dot = 0.0f;
  for (int j4 = 4 * lane; j4 < t; j4 += 4 * kWarpSize) {
    const uint32_t keep = p > 0.0f ? attention_keep_bits<4>(rng, first + j4, threshold) : 0xFu;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = j4 + e;
      if (j >= t) break;
      if ((keep >> e) & 1u) dot += to_float(prob[j]) * g[j] * keep_scale;
    }
  }
  dot = warp_sum(dot);
  for (int chunk = 0; chunk < t; chunk += 4 * kWarpSize) {
    const int j4 = chunk + 4 * lane;
    const uint32_t keep =
        p > 0.0f && j4 < t ? attention_keep_bits<4>(rng, first + j4, threshold) : 0xFu;
    float dp[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = j4 + e;
      dp[e] = j < t && ((keep >> e) & 1u) ? g[j] * keep_scale : 0.0f;
    }
    __syncwarp();
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = j4 + e;
      if (j < t) ds[j] = from_float<T>(to_float(prob[j]) * (dp[e] - dot));
    }
  }
}

// Where matrix (b, h) of an operand lives: element base + b * per_batch + h * per_head.
struct HeadMatrices {
  Tensor storage;
  int64_t base, per_batch, per_head, rows, cols, ld;
};

struct Plan {
  int64_t b, t, h, heads, d;
  bool loop_over_heads;  // loop over heads, batch over b (else loop over b, batch over heads)
  int64_t steps() const { return loop_over_heads ? heads : b; }
  int64_t batch() const { return loop_over_heads ? b : heads; }

  MatrixBatch at(const HeadMatrices& x, int64_t step) const {
    return loop_over_heads
               ? MatrixBatch{x.storage,  x.base + step * x.per_head, x.rows, x.cols, x.ld,
                             x.per_batch}
               : MatrixBatch{x.storage, x.base + step * x.per_batch, x.rows, x.cols, x.ld,
                             x.per_head};
  }
  // Head views of a [B, T, 3H] tensor: part 0 = Q, 1 = K, 2 = V.
  HeadMatrices qkv_part(const Tensor& qkv, int part) const {
    return HeadMatrices{qkv, part * h, t * 3 * h, d, t, d, 3 * h};
  }
  HeadMatrices hidden(const Tensor& x) const { return HeadMatrices{x, 0, t * h, d, t, d, h}; }
  // [T, T] per head with leading dimension ld (t unless given).
  HeadMatrices scores(const Tensor& x, int64_t ld = 0) const {
    if (ld == 0) ld = t;
    return HeadMatrices{x, 0, heads * t * ld, t * ld, t, t, ld};
  }
};

Plan plan_of(const Tensor& qkv, const AttentionArgs& args) {
  const int64_t b = qkv.dim(0), h = qkv.dim(2) / 3;
  return Plan{b, qkv.dim(1), h, args.heads, h / args.heads, args.heads <= b};
}

uint64_t site_of(const AttentionArgs& args) {
  return dropout_site_offset(args.site);
}

float keep_scale_of(const AttentionArgs& args) {
  return 1.0f / (1.0f - args.dropout_p);
}

template <class T>
T* data_of(const Tensor& t) {
  return static_cast<T*>(t.data);
}

template <class T>
DType dtype_of() {
  return std::is_same_v<T, float> ? DType::F32 : DType::BF16;
}

// The f32 scratch's bytes as elements of T: Pd (T, [B, heads, T, T] dense from the start) and dS
// (T, row pitch ds_pitch) of a bf16 call live there.
template <class T>
Tensor scratch_as(const Tensor& scratch) {
  return Tensor::view_of(scratch.data, dtype_of<T>(), Device::CUDA,
                         {scratch.numel() * static_cast<int64_t>(sizeof(float) / sizeof(T))});
}

// The row pitch, in elements of T, of dS written over the f32 dPd rows of t elements.
template <class T>
int64_t ds_pitch(int64_t t) {
  return t * static_cast<int64_t>(sizeof(float) / sizeof(T));
}

template <class T>
void launch_softmax_forward(Context& ctx, const Plan& pl, const Tensor& mask,
                            const AttentionArgs& args, const Tensor& probs, const Tensor* pd) {
  const int64_t rows = pl.b * pl.heads * pl.t;
  softmax_dropout_forward_kernel<T><<<ceil_div(rows, kRowsPerBlock), kThreads, 0, ctx.stream()>>>(
      data_of<T>(probs), pd != nullptr ? data_of<T>(*pd) : nullptr, mask.ptr<int32_t>(), rows,
      static_cast<int>(pl.t), pl.heads * pl.t, args.rng, site_of(args), args.dropout_p,
      keep_scale_of(args));
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_dropout_probs(Context& ctx, const AttentionArgs& args, const Tensor& probs,
                          const Tensor& pd) {
  const int64_t t = probs.dim(probs.rank - 1), rows = probs.numel() / std::max<int64_t>(t, 1);
  const int64_t blocks = std::min<int64_t>(ceil_div(rows * ceil_div(t, 4), kThreads), 65535);
  dropout_probs_kernel<T><<<blocks, kThreads, 0, ctx.stream()>>>(
      data_of<T>(probs), data_of<T>(pd), rows, static_cast<int>(t), args.rng, site_of(args),
      args.dropout_p, keep_scale_of(args));
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_softmax_backward(Context& ctx, const Plan& pl, const AttentionArgs& args,
                             const Tensor& probs, const Tensor& grad) {
  const int64_t rows = pl.b * pl.heads * pl.t;
  softmax_dropout_backward_kernel<T><<<ceil_div(rows, kRowsPerBlock), kThreads, 0, ctx.stream()>>>(
      data_of<T>(probs), data_of<float>(grad), rows, static_cast<int>(pl.t), args.rng,
      site_of(args), args.dropout_p, keep_scale_of(args));
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class T>
void forward_typed(Context& ctx, const Tensor& qkv, const Tensor& mask, const AttentionArgs& args,
                   const Tensor& probs, const Tensor& scratch, const Tensor& out) {
  const Plan pl = plan_of(qkv, args);
  const float scale = 1.0f / std::sqrt(static_cast<float>(pl.d));
  const HeadMatrices q = pl.qkv_part(qkv, 0), k = pl.qkv_part(qkv, 1), v = pl.qkv_part(qkv, 2);
  const HeadMatrices s = pl.scores(probs), o = pl.hidden(out);
  for (int64_t step = 0; step < pl.steps(); ++step) {
    matmul_batched(ctx, pl.at(q, step), false, pl.at(k, step), true, pl.at(s, step), pl.batch(),
                   scale, 0);
  }
  const bool drop = args.dropout_p > 0;
  const Tensor pd_storage = scratch_as<T>(scratch);
  launch_softmax_forward<T>(ctx, pl, mask, args, probs, drop ? &pd_storage : nullptr);
  const HeadMatrices pd = pl.scores(drop ? pd_storage : probs);
  for (int64_t step = 0; step < pl.steps(); ++step) {
    matmul_batched(ctx, pl.at(pd, step), false, pl.at(v, step), false, pl.at(o, step), pl.batch());
  }
}

template <class T>
void backward_typed(Context& ctx, const Tensor& qkv, const AttentionArgs& args, const Tensor& probs,
                    const Tensor& dout, const Tensor& scratch, const Tensor& dqkv) {
  const Plan pl = plan_of(qkv, args);
  const float scale = 1.0f / std::sqrt(static_cast<float>(pl.d));
  const HeadMatrices q = pl.qkv_part(qkv, 0), k = pl.qkv_part(qkv, 1), v = pl.qkv_part(qkv, 2);
  const HeadMatrices dq = pl.qkv_part(dqkv, 0), dk = pl.qkv_part(dqkv, 1),
                     dv = pl.qkv_part(dqkv, 2);
  const Tensor t_storage = scratch_as<T>(scratch);
  const HeadMatrices g = pl.hidden(dout), dpd = pl.scores(scratch);
  const HeadMatrices ds = pl.scores(t_storage, ds_pitch<T>(pl.t));
  const bool drop = args.dropout_p > 0;
  if (drop) launch_dropout_probs<T>(ctx, args, probs, t_storage);
  const HeadMatrices pd = pl.scores(drop ? t_storage : probs);
  // dV = Pd^T dout, then dPd = dout V^T in f32 over the same scratch (stream order keeps Pd
  // alive), then dS over dPd (softmax_dropout_backward_kernel).
  for (int64_t step = 0; step < pl.steps(); ++step) {
    matmul_batched(ctx, pl.at(pd, step), true, pl.at(g, step), false, pl.at(dv, step), pl.batch());
  }
  for (int64_t step = 0; step < pl.steps(); ++step) {
    matmul_batched(ctx, pl.at(g, step), false, pl.at(v, step), true, pl.at(dpd, step), pl.batch());
  }
  launch_softmax_backward<T>(ctx, pl, args, probs, scratch);
  // dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
  for (int64_t step = 0; step < pl.steps(); ++step) {
    matmul_batched(ctx, pl.at(ds, step), false, pl.at(k, step), false, pl.at(dq, step), pl.batch(),
                   scale, 0);
    matmul_batched(ctx, pl.at(ds, step), true, pl.at(q, step), false, pl.at(dk, step), pl.batch(),
                   scale, 0);
  }
}

// kFlashDsGemm: dQ = dS K / sqrt(d) into dqkv's Q columns, from dS^T [B, heads, T, T] (qkv's
// dtype, unscaled, key-major) that the flash dK, dV blocks wrote into the scratch.
void dq_from_ds(Context& ctx, const Tensor& qkv, const AttentionArgs& args, const Tensor& ds,
                const Tensor& dqkv) {
  const Plan pl = plan_of(qkv, args);
  const float scale = 1.0f / std::sqrt(static_cast<float>(pl.d));
  const HeadMatrices k = pl.qkv_part(qkv, 1), dq = pl.qkv_part(dqkv, 0), s = pl.scores(ds);
  for (int64_t step = 0; step < pl.steps(); ++step) {
    matmul_batched(ctx, pl.at(s, step), true, pl.at(k, step), false, pl.at(dq, step), pl.batch(),
                   scale, 0);
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

// Version 2 (kernels/attention_flash.h): saved = L [B, heads, T] f32; the forward does not use the
// scratch (kFlashDsGemm's forward is version 2's; kFlashShort's is its own where
// attention_uses_short, else version 2's).
void AttentionForward::cuda(Context& ctx) const {
  if (qkv.numel() == 0) return;  // B = 0 or T = 0: nothing to launch
  const int64_t t = qkv.dim(1), h = qkv.dim(2) / 3;
  if (attention_uses_short(Device::CUDA, args, t, h, qkv.dtype)) {
    cuda::flash_attention_forward_short(ctx, qkv, mask, args, saved, out, keep);
  } else if (attention_uses_flash(Device::CUDA, args, t, h)) {
    cuda::flash_attention_forward(ctx, qkv, mask, args, saved, out, keep);
  } else if (qkv.dtype == DType::F32) {
    cuda::forward_typed<float>(ctx, qkv, mask, args, saved, scratch, out);
  } else {
    check_dtype(qkv, DType::BF16, "attention (cuda): qkv");
    cuda::forward_typed<__nv_bfloat16>(ctx, qkv, mask, args, saved, scratch, out);
  }
}

void AttentionBackward::cuda(Context& ctx) const {
  if (qkv.numel() == 0) return;
  const int64_t t = qkv.dim(1), h = qkv.dim(2) / 3;
  if (attention_uses_ds_gemm(Device::CUDA, args, t, h)) {
    cuda::flash_attention_backward(ctx, qkv, mask, args, saved, out, dout, keep, dqkv, &scratch);
    cuda::dq_from_ds(ctx, qkv, args, scratch, dqkv);
  } else if (attention_uses_short(Device::CUDA, args, t, h, qkv.dtype)) {
    cuda::flash_attention_backward_short(ctx, qkv, mask, args, saved, out, dout, keep, dqkv);
  } else if (attention_uses_flash(Device::CUDA, args, t, h)) {
    cuda::flash_attention_backward(ctx, qkv, mask, args, saved, out, dout, keep, dqkv, nullptr);
  } else if (qkv.dtype == DType::F32) {
    cuda::backward_typed<float>(ctx, qkv, args, saved, dout, scratch, dqkv);
  } else {
    check_dtype(qkv, DType::BF16, "attention (cuda): qkv");
    cuda::backward_typed<__nv_bfloat16>(ctx, qkv, args, saved, dout, scratch, dqkv);
  }
}

}  // namespace electra
