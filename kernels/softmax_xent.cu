// softmax_xent kernel: one block of 16 warps per row. Warp w owns the contiguous columns
// [w S, (w + 1) S) of the row, S = 32 ceil(stride / 512), which its lanes read 32 at a time
// (coalesced). Each warp makes three passes over its own columns, with two block-wide exchanges:
//   1. the max and the argmax: an fmaxf and a select per element (no branch, no exp); the warps'
//      results meet in shared memory and every thread combines them in the same order.
//   2. the sum of exp(x - max) for the loss (no online rescale: the max is known) and the integer
//      sample weights of kernels/softmax_sample.h, summed per warp; every thread then reads the
//      row's sum, the total weight W and the weight of the warps before its own.
//   3. the one warp whose columns hold the target floor(W r / 2^32) walks them again, 32 at a time
//      (an inclusive warp scan of the weights, a ballot for the first prefix above the target),
//      and writes the sample; then every warp overwrites its own columns with dlogits. After the
//      second exchange a warp reads and writes only its own columns, so the search needs no sync.
// Per element: one expf and the fixed-point 2^t (about 16 float operations, a few integer ones and
// a 64-bit shift; no conversion instruction) in pass 2, one expf in pass 3; one Philox call per
// row, no log, no division. Deterministic: the float reductions have a fixed tree and the integer
// sums are exact, so the sample is the CPU reference's whatever the order of the additions.
#include <climits>

#include "kernels/cuda_common.cuh"
#include "kernels/softmax_sample.h"
#include "kernels/softmax_xent.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / kWarpSize;
constexpr unsigned kFullMask = 0xffffffffu;

// A largest logit and its column (INT_MAX: none above -inf).
struct Top {
  float value;
  int index;
};

// The larger value, ties to the lower column: commutative, so both lanes of a butterfly agree.
__device__ __forceinline__ Top better(const Top& a, const Top& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index) ? a : b;
}

__device__ __forceinline__ Top warp_top(Top t) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    t = better(t, Top{__shfl_xor_sync(kFullMask, t.value, offset),
                      __shfl_xor_sync(kFullMask, t.index, offset)});
  }
  return t;
}

__device__ __forceinline__ uint64_t warp_total(uint64_t x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

__device__ __forceinline__ uint64_t warp_inclusive_scan(uint64_t x) {
  const int lane = threadIdx.x % kWarpSize;
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const uint64_t y = __shfl_up_sync(kFullMask, x, offset);
    if (lane >= offset) x += y;
  }
  return x;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    softmax_xent_kernel(T* logits, int stride, int vocab, const int32_t* labels,
                        const float* weights, RngStream stream_arg, float exp2_scale,
                        DeviceScalar<float> scale_arg, float* loss, int32_t* sample,
                        int32_t* argmax) {
  __shared__ Top tops[kWarps];
  __shared__ float sums[kWarps];
  __shared__ uint64_t sample_weights[kWarps];
  const int64_t row = blockIdx.x;
  T* x = logits + row * stride;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int span = kWarpSize * static_cast<int>(ceil_div(stride, kThreads));
  const int begin = warp * span, end = min(begin + span, stride), valid_end = min(end, vocab);
  const float w = weights[row];
  const int label = labels[row];
  const bool label_ok = label >= 0 && label < vocab;
  // Thread 0's reads for the loss and the argmax come before the first exchange, so before any
  // warp overwrites its columns.
  const float label_logit = threadIdx.x == 0 && w != 0.0f && label_ok ? to_float(x[label]) : 0.0f;
  const bool nan_first = threadIdx.x == 0 && isnan(to_float(x[0]));

  // Pass 1: columns ascend per lane, so `>` keeps the first of equal values.
  Top top{-INFINITY, INT_MAX};
#pragma unroll 4
  for (int j = begin + lane; j < valid_end; j += kWarpSize) {
    const float xj = to_float(x[j]);
    top.index = xj > top.value ? j : top.index;
    top.value = fmaxf(top.value, xj);
  }
  top = warp_top(top);
  if (lane == 0) tops[warp] = top;
  __syncthreads();
  top = tops[0];
  for (int k = 1; k < kWarps; ++k) top = better(top, tops[k]);
  const float max = top.value;  // the largest non-NaN logit, -inf if none (fmaxf drops NaN)

  // Pass 2.
  float sum = 0.0f;
  uint64_t weight = 0;
#pragma unroll 4
  for (int j = begin + lane; j < valid_end; j += kWarpSize) {
    const float xj = to_float(x[j]);
    sum += expf(xj - max);
    weight += sample_weight(xj, max, exp2_scale);
  }
  sum = warp_sum(sum);
  weight = warp_total(weight);
  if (lane == 0) {
    sums[warp] = sum;
    sample_weights[warp] = weight;
  }
  __syncthreads();
  float row_sum = 0.0f;
  uint64_t total = 0, below = 0;  // below: the weight of the columns before this warp's
  for (int k = 0; k < kWarps; ++k) {
    row_sum += sums[k];
    total += sample_weights[k];
    below += k < warp ? sample_weights[k] : 0;
  }
  const float lse = max + logf(row_sum);
  const int top_index = nan_first || top.index == INT_MAX ? 0 : top.index;
  if (threadIdx.x == 0) {
    argmax[row] = top_index;
    loss[row] = w == 0.0f ? 0.0f : (label_ok ? w * (lse - label_logit) : NAN);
    if (total == 0) sample[row] = top_index;
  }

  // Pass 3: the search (one warp; the condition is the same in all its lanes), then dlogits.
  const RngStream stream = stream_arg.resolved();
  const uint64_t target = sample_target(total, stream.bits(static_cast<uint64_t>(row)));
  if (below <= target && target < below + sample_weights[warp]) {
    for (int tile = begin; tile < valid_end; tile += kWarpSize) {
      const int j = tile + lane;
      const uint64_t wj = j < valid_end ? sample_weight(to_float(x[j]), max, exp2_scale) : 0;
      const uint64_t prefix = below + warp_inclusive_scan(wj);
      const unsigned hit = __ballot_sync(kFullMask, prefix > target);
      if (hit != 0) {
        if (lane == __ffs(hit) - 1) sample[row] = j;
        break;
      }
      below = __shfl_sync(kFullMask, prefix, kWarpSize - 1);
    }
  }
  const float coef = w * scale_arg.get();
#pragma unroll 4
  for (int j = begin + lane; j < end; j += kWarpSize) {
    float d = 0.0f;
    if (w != 0.0f && j < vocab) {
      d = coef * expf(to_float(x[j]) - lse);
      if (j == label) d -= coef;
    }
    x[j] = from_float<T>(d);
  }
}

template <class T>
void launch(Context& ctx, T* logits, const Tensor& labels, const Tensor& weights,
            const SoftmaxXentParams& params, const Tensor& loss, const Tensor& sample,
            const Tensor& argmax, int64_t rows, int64_t stride) {
  if (rows == 0) return;
  softmax_xent_kernel<T><<<rows, kThreads, 0, ctx.stream()>>>(
      logits, static_cast<int>(stride), static_cast<int>(params.vocab), labels.ptr<int32_t>(),
      weights.ptr<float>(), params.stream, sample_exp2_scale(params.temperature), params.scale,
      loss.ptr<float>(), sample.ptr<int32_t>(), argmax.ptr<int32_t>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void SoftmaxXent::cuda(Context& ctx) const {
  const int64_t rows = logits.dim(0), stride = logits.dim(1);
  // Column indices are ints; the 16 warps' spans end below stride + 512.
  ELECTRA_CHECK(stride < INT_MAX - cuda::kThreads, "softmax_xent (cuda): row stride ", stride);
  check_dtype(loss, DType::F32, "softmax_xent (cuda) loss");
  cuda::dispatch_activation(logits, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ctx, static_cast<T*>(logits.data), labels, weights, params, loss, sample, argmax,
                 rows, stride);
  });
}

}  // namespace electra
