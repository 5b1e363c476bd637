// reinforce kernel: one block per slot row. Thread 0 computes the slot's scalars (reward,
// baseline, advantage, log p of the sample: it reads the row's sample column before any thread
// writes the row) into shared memory; then the block rewrites the row. Memory-bound: one read and
// one write of the row (a third pass over the generator's logits, after softmax_xent's two).
#include <cfloat>

#include "kernels/cuda_common.cuh"
#include "kernels/reinforce.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float softplus(float x) {
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    reinforce_kernel(T* dlogits, int64_t stride, int64_t vocab, const int32_t* labels,
                     const int32_t* samples, const float* weights, const float* token_loss,
                     const int32_t* positions, int64_t slots, int64_t seq_len, const T* baseline,
                     DeviceScalar<float> scale_arg, T* baseline_grad, float* reward,
                     float* advantage, float* log_prob, float* baseline_loss) {
  const int64_t i = blockIdx.x;
  T* row = dlogits + i * stride;
  const bool used = weights[i] != 0.0f;
  __shared__ float gain;  // scale * advantage
  if (threadIdx.x == 0) {
    float r = 0.0f, a = 0.0f, lp = 0.0f, bl = 0.0f, du = 0.0f;
    if (used) {
      const float s = scale_arg.get();
      r = token_loss[(i / slots) * seq_len + positions[i]];
      const float q = expf(-r), u = to_float(baseline[i]);
      a = r - softplus(-u);
      bl = q * softplus(-u) + (1.0f - q) * softplus(u);
      du = s * (1.0f / (1.0f + expf(-u)) - q);
      const int32_t x = samples[i];
      const float p = to_float(row[x]) + (x == labels[i] ? 1.0f : 0.0f);
      lp = logf(fmaxf(p, FLT_MIN));
      gain = s * a;
    } else {
      gain = 0.0f;
    }
    reward[i] = r;
    advantage[i] = a;
    log_prob[i] = lp;
    baseline_loss[i] = bl;
    baseline_grad[i] = from_float<T>(du);
  }
  __syncthreads();
  const float g = gain;
  const int32_t y = used ? labels[i] : -1, x = used ? samples[i] : -1;
  for (int64_t j = threadIdx.x; j < stride; j += kThreads) {
    float out = 0.0f;
    if (used && j < vocab) {
      const float p = to_float(row[j]) + (j == y ? 1.0f : 0.0f);
      out = g * (p - (j == x ? 1.0f : 0.0f));
    }
    row[j] = from_float<T>(out);
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void Reinforce::cuda(Context& ctx) const {
  check_dtype(token_loss, DType::F32, "reinforce (cuda) token_loss");
  const int64_t m = dlogits.dim(0);
  cuda::dispatch_activation(dlogits, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::reinforce_kernel<T><<<m, cuda::kThreads, 0, ctx.stream()>>>(
        static_cast<T*>(dlogits.data), dlogits.dim(1), params.vocab, labels.ptr<int32_t>(),
        samples.ptr<int32_t>(), weights.ptr<float>(), token_loss.ptr<float>(),
        positions.ptr<int32_t>(), positions.dim(1), token_loss.numel() / positions.dim(0),
        static_cast<const T*>(baseline.data), params.scale, static_cast<T*>(baseline_grad.data),
        out.reward.ptr<float>(), out.advantage.ptr<float>(), out.log_prob.ptr<float>(),
        out.baseline_loss.ptr<float>());
    ELECTRA_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace electra
