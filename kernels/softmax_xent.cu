// softmax_xent kernel: one block per row. Pass 1 reads the row once and keeps, per thread, an
// online (max, sum of exp) pair, the plain argmax and the Gumbel-max sample; one fixed reduction
// tree combines them (deterministic: every combine is commutative and the tree does not depend on
// the data). Pass 2 overwrites the row with dlogits (a second read of the row, mostly from L2).
//
// Threads walk the row in Philox blocks of four consecutive stream elements (i * V + j), so one
// Philox call feeds four columns. Rows start at arbitrary element offsets (V = 30522 is odd
// modulo 4), so the logits are read with scalar loads: each warp still touches one contiguous span.
// Per element: one expf (plus one on a new running max), two logf for the noise, one Philox per 4.
#include <climits>

#include "kernels/cuda_common.cuh"
#include "kernels/softmax_xent.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 512;

struct RowStats {
  float max;  // running max of the logits
  float sum;  // sum of exp(x - max)
  float top;  // largest logit and its column
  int top_index;
  float best;  // largest x / T + g and its column
  int best_index;
};

__device__ __forceinline__ bool better(float a, int ai, float b, int bi) {
  return a > b || (a == b && ai < bi);
}

// Commutative: combine(a, b) and combine(b, a) give the same bits, so both lanes of a butterfly
// agree.
__device__ __forceinline__ RowStats combine(const RowStats& a, const RowStats& b) {
  RowStats r;
  r.max = fmaxf(a.max, b.max);
  if (r.max == -INFINITY) {
    r.sum = 0.0f;
  } else {
    // Explicit rounding: an FMA contraction would make the combine order-dependent.
    r.sum = __fadd_rn(__fmul_rn(a.sum, expf(a.max - r.max)), __fmul_rn(b.sum, expf(b.max - r.max)));
  }
  const bool a_top = better(a.top, a.top_index, b.top, b.top_index);
  r.top = a_top ? a.top : b.top;
  r.top_index = a_top ? a.top_index : b.top_index;
  const bool a_best = better(a.best, a.best_index, b.best, b.best_index);
  r.best = a_best ? a.best : b.best;
  r.best_index = a_best ? a.best_index : b.best_index;
  return r;
}

__device__ __forceinline__ RowStats shuffle_xor(const RowStats& s, int offset) {
  RowStats r;
  r.max = __shfl_xor_sync(0xffffffffu, s.max, offset);
  r.sum = __shfl_xor_sync(0xffffffffu, s.sum, offset);
  r.top = __shfl_xor_sync(0xffffffffu, s.top, offset);
  r.top_index = __shfl_xor_sync(0xffffffffu, s.top_index, offset);
  r.best = __shfl_xor_sync(0xffffffffu, s.best, offset);
  r.best_index = __shfl_xor_sync(0xffffffffu, s.best_index, offset);
  return r;
}

__device__ __forceinline__ RowStats warp_combine(RowStats s) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) s = combine(s, shuffle_xor(s, offset));
  return s;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    softmax_xent_kernel(T* logits, int64_t stride, int vocab, const int32_t* labels,
                        const float* weights, RngStream stream_arg, float temperature,
                        DeviceScalar<float> scale_arg, float* loss, int32_t* sample,
                        int32_t* argmax) {
  const RngStream stream = stream_arg.resolved();
  const float scale = scale_arg.get();
  __shared__ RowStats warp_stats[kThreads / kWarpSize];
  __shared__ float label_logit;
  const int64_t row = blockIdx.x;
  T* x = logits + row * stride;
  const float w = weights[row];
  const int label = labels[row];
  const bool label_ok = label >= 0 && label < vocab;
  // Read before pass 2 overwrites the row; the reductions below order it before any write.
  if (threadIdx.x == 0) label_logit = w != 0.0f && label_ok ? to_float(x[label]) : 0.0f;

  RowStats s{-INFINITY, 0.0f, -INFINITY, INT_MAX, -INFINITY, INT_MAX};
  const uint64_t base = static_cast<uint64_t>(row) * static_cast<uint64_t>(vocab);
  const uint64_t first = base / 4, last = (base + vocab - 1) / 4;
  for (uint64_t q = first + threadIdx.x; q <= last; q += kThreads) {
    const U32x4 bits = stream.block(q);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint64_t e = 4 * q + k;
      if (e < base || e >= base + vocab) continue;
      const int j = static_cast<int>(e - base);
      const float xj = to_float(x[j]);
      if (xj > s.max) {
        s.sum = s.sum * expf(s.max - xj) + 1.0f;
        s.max = xj;
      } else {
        s.sum += expf(xj - s.max);
      }
      if (xj > s.top)
        s.top = xj, s.top_index = j;  // columns ascend per thread: ties keep the first
      const float score = add_rn(div_rn(xj, temperature), gumbel(bits.v[k]));
      if (score > s.best) s.best = score, s.best_index = j;
    }
  }
  s = warp_combine(s);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) warp_stats[warp] = s;
  __syncthreads();
  if (warp == 0) {
    constexpr int kWarps = kThreads / kWarpSize;
    s = lane < kWarps ? warp_stats[lane]
                      : RowStats{-INFINITY, 0.0f, -INFINITY, INT_MAX, -INFINITY, INT_MAX};
    s = warp_combine(s);
    if (lane == 0) warp_stats[0] = s;
  }
  __syncthreads();
  s = warp_stats[0];
  const float lse = s.max + logf(s.sum);
  if (threadIdx.x == 0) {
    sample[row] = s.best_index;
    argmax[row] = s.top_index;
    loss[row] = w == 0.0f ? 0.0f : (label_ok ? w * (lse - label_logit) : NAN);
  }

  const float coef = w * scale;
  for (int64_t j = threadIdx.x; j < stride; j += kThreads) {
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
      logits, stride, static_cast<int>(params.vocab), labels.ptr<int32_t>(), weights.ptr<float>(),
      params.stream, params.temperature, params.scale, loss.ptr<float>(), sample.ptr<int32_t>(),
      argmax.ptr<int32_t>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void SoftmaxXent::cuda(Context& ctx) const {
  const int64_t rows = logits.dim(0), stride = logits.dim(1);
  ELECTRA_CHECK(params.vocab < INT_MAX, "softmax_xent (cuda): vocab ", params.vocab);
  check_dtype(loss, DType::F32, "softmax_xent (cuda) loss");
  cuda::dispatch_activation(logits, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ctx, static_cast<T*>(logits.data), labels, weights, params, loss, sample, argmax,
                 rows, stride);
  });
}

}  // namespace electra
