// softmax_xent kernel: one block of 16 warps per row. Warp w owns the contiguous columns
// [w S, (w + 1) S) of the row, S = 32 V ceil(stride / (512 V)), which its lanes read 32 V at a
// time (coalesced): V = 8 consecutive columns a lane in 16-byte accesses when the row stride is a
// multiple of 8 and the logits 16-byte aligned (the model's vocabulary padded to a multiple of
// 128), else V = 1. Each warp makes three passes over its own columns, with two block-wide
// exchanges:
//   1. the max and the argmax: an fmaxf and a select per element (no branch, no exp); the warps'
//      results meet in shared memory and every thread combines them in the same order.
//   2. the sum of exp(x - max) for the loss (no online rescale: the max is known) and the integer
//      sample weights of kernels/softmax_sample.h, summed per warp; every thread then reads the
//      row's sum, the total weight W and the weight of the warps before its own.
//   3. the one warp whose columns hold the target floor(W r / 2^32) walks them again, 32 V at a
//      time (an inclusive warp scan of the lanes' weights, a ballot for the first lane whose
//      prefix passes the target, then that lane's V columns in order), and writes the sample;
//      then every warp overwrites its own columns with dlogits. After the second exchange a warp
//      reads and writes only its own columns, so the search needs no sync.
// Per element: one expf and the fixed-point 2^t (about 16 float operations, a few integer ones and
// a 64-bit shift; no conversion instruction) in pass 2, one expf in pass 3; one Philox call per
// row, no log, no division. Deterministic: the float reductions have a fixed tree and the integer
// sums are exact, so the sample is the CPU reference's whatever the order of the additions.
// Why 16-byte accesses: with V = 1 a bf16 lane read 2 bytes an instruction, 4 in flight (8 bytes
// a thread), so the passes waited on memory latency (the 2026-11-27 H100 run: 36.6% of the copy
// bandwidth at Small, bench/RESULTS.md); with V = 8, 2 accesses in flight are 32 bytes a thread
// (64 in f32) and an eighth of the load instructions and their address arithmetic.
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

// V columns of row x from column j0 as f32 (V = 8: 16-byte aligned, all below the row's stride),
// those at or past valid_end (the vocabulary's padding) as -inf, which changes nothing in passes
// 1 and 2: -inf is never the max (fmaxf, `>`), exp(-inf - max) adds +0 (NaN when the max is -inf,
// but then the row's own columns already made the sum NaN) and its sample weight is 0
// (kernels/softmax_sample.h). A select per element instead of a branch around its work.
template <int V, class T>
__device__ __forceinline__ void load_valid(const T* x, int j0, int valid_end, float (&out)[V]) {
  load_vec<V>(x + j0, out);
#pragma unroll
  for (int e = 0; e < V; ++e) out[e] = j0 + e < valid_end ? out[e] : -INFINITY;
}

// f(j, x_j) for a lane's columns below valid_end in ascending order: V from column `first`, then V
// a warp tile (32 V columns) further each time; the padding as -inf (load_valid); kUnroll
// accesses in flight.
template <int V, int kUnroll, class T, class F>
__device__ __forceinline__ void for_lane_columns(const T* x, int first, int valid_end, F&& f) {
#pragma unroll(kUnroll)
  for (int j0 = first; j0 < valid_end; j0 += kWarpSize * V) {
    float xv[V];
    load_valid(x, j0, valid_end, xv);
#pragma unroll
    for (int e = 0; e < V; ++e) f(j0 + e, xv[e]);
  }
}

template <class T, int V>
__global__ void __launch_bounds__(kThreads)
    softmax_xent_kernel(T* logits, int stride, int vocab, const int32_t* labels,
                        const float* weights, RngStream stream_arg, float exp2_scale,
                        DeviceScalar<float> scale_arg, float* loss, int32_t* sample,
                        int32_t* argmax) {
  constexpr int kTile = kWarpSize * V;     // columns a warp reads at once
  constexpr int kUnroll = V == 1 ? 4 : 2;  // accesses in flight a lane
  __shared__ Top tops[kWarps];
  __shared__ float sums[kWarps];
  __shared__ uint64_t sample_weights[kWarps];
  const int64_t row = blockIdx.x;
  T* x = logits + row * stride;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int span = kTile * static_cast<int>(ceil_div(stride, kThreads * V));
  // With V = 8 the stride is a multiple of 8, so a lane's V columns lie below `end` together.
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
  for_lane_columns<V, kUnroll>(x, begin + lane * V, valid_end, [&](int j, float xj) {
    top.index = xj > top.value ? j : top.index;
    top.value = fmaxf(top.value, xj);
  });
  top = warp_top(top);
  if (lane == 0) tops[warp] = top;
  __syncthreads();
  top = tops[0];
  for (int k = 1; k < kWarps; ++k) top = better(top, tops[k]);
  const float max = top.value;  // the largest non-NaN logit, -inf if none (fmaxf drops NaN)

  // Pass 2.
  float sum = 0.0f;
  uint64_t weight = 0;
  for_lane_columns<V, kUnroll>(x, begin + lane * V, valid_end, [&](int, float xj) {
    sum += expf(xj - max);
    weight += sample_weight(xj, max, exp2_scale);
  });
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
    for (int j0 = begin + lane * V; j0 - lane * V < valid_end; j0 += kTile) {
      uint64_t wv[V] = {};
      uint64_t lane_weight = 0;
      if (j0 < valid_end) {
        float xv[V];
        load_valid(x, j0, valid_end, xv);
#pragma unroll
        for (int e = 0; e < V; ++e) {
          wv[e] = sample_weight(xv[e], max, exp2_scale);
          lane_weight += wv[e];
        }
      }
      // The weight of the columns up to this lane's last, from the warp's first.
      const uint64_t prefix = below + warp_inclusive_scan(lane_weight);
      const unsigned hit = __ballot_sync(kFullMask, prefix > target);
      if (hit != 0) {
        if (lane == __ffs(hit) - 1) {
          // The first of this lane's columns whose prefix passes the target (the last does).
          uint64_t at = prefix - lane_weight;
          int k = -1;
#pragma unroll
          for (int e = 0; e < V; ++e) {
            at += wv[e];
            k = k < 0 && at > target ? e : k;
          }
          sample[row] = j0 + k;
        }
        break;
      }
      below = __shfl_sync(kFullMask, prefix, kWarpSize - 1);
    }
  }
  const float coef = w * scale_arg.get();
#pragma unroll(kUnroll)
  for (int j0 = begin + lane * V; j0 < end; j0 += kTile) {
    float d[V] = {};
    if (w != 0.0f) load_vec<V>(x + j0, d);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int j = j0 + e;
      const float p = coef * expf(d[e] - lse);
      d[e] = w != 0.0f && j < vocab ? (j == label ? p - coef : p) : 0.0f;
    }
    store_vec<V>(x + j0, d);
  }
}

template <class T>
void launch(Context& ctx, T* logits, const Tensor& labels, const Tensor& weights,
            const SoftmaxXentParams& params, const Tensor& loss, const Tensor& sample,
            const Tensor& argmax, int64_t rows, int64_t stride) {
  if (rows == 0) return;
  auto kernel =
      vectorizable(stride, {logits}) ? softmax_xent_kernel<T, 8> : softmax_xent_kernel<T, 1>;
  kernel<<<rows, kThreads, 0, ctx.stream()>>>(
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
  // Column indices are ints; the 16 warps' spans end below stride + 512 V (V <= 8).
  ELECTRA_CHECK(stride < INT_MAX - 8 * cuda::kThreads, "softmax_xent (cuda): row stride ", stride);
  check_dtype(loss, DType::F32, "softmax_xent (cuda) loss");
  cuda::dispatch_activation(logits, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ctx, static_cast<T*>(logits.data), labels, weights, params, loss, sample, argmax,
                 rows, stride);
  });
}

}  // namespace electra
