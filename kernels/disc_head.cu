// disc_head kernel: elementwise loss and dlogit, with the counts reduced deterministically in two
// passes of one launch. Pass 1: each block takes kDiscHeadThreads * kDiscHeadItemsPerThread
// consecutive tokens (coalesced: item k of thread t is token k * threads + t), sums the six counts
// in f32 with a fixed tree and writes them to workspace[block]. Pass 2: the block that finishes
// pass 1 last (a ticket: kernels/column_sum.cuh, last_arrival) adds the partials in block order
// per thread and then in a fixed tree. The partition and the order depend on N only, never on the
// GPU or on which block arrives last.
// Memory-bound: 4 (or 2) + 4 + 4 bytes read and 4 + 4 (or 2) written per token.
#include "engine/ticket_counters.h"
#include "kernels/column_sum.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/disc_head.h"

namespace electra::cuda {
namespace {

// Pass 2, by the last block: counts[c] = the sum of the blocks' partials of count c. The partials
// are read from L2 (__ldcg): the other blocks wrote them.
__device__ void add_partials(const float* partials, int64_t blocks, float* counts, float* scratch) {
  for (int c = 0; c < kDiscCounts; ++c) {
    float sum = 0.0f;
    for (int64_t b = threadIdx.x; b < blocks; b += kDiscHeadThreads) {
      sum += __ldcg(partials + b * kDiscCounts + c);
    }
    const float total = block_sum(sum, scratch);
    if (threadIdx.x == 0) counts[c] = total;
  }
}

template <class T>
__global__ void __launch_bounds__(kDiscHeadThreads)
    disc_head_kernel(const T* logits, const int32_t* labels, const float* weights,
                     DeviceScalar<float> scale_arg, int64_t n, float* loss, T* dlogits,
                     float* partials, uint32_t* ticket, float* counts) {
  const float scale = scale_arg.get();
  __shared__ float scratch[kWarpSize];
  float sums[kDiscCounts] = {};
  const int64_t first = blockIdx.x * int64_t{kDiscHeadThreads} * kDiscHeadItemsPerThread;
#pragma unroll
  for (int k = 0; k < kDiscHeadItemsPerThread; ++k) {
    const int64_t i = first + k * kDiscHeadThreads + threadIdx.x;
    if (i >= n) break;
    const float z = to_float(logits[i]), w = weights[i];
    const bool actual = labels[i] == 1, predicted = z > 0.0f;
    const float y = actual ? 1.0f : 0.0f;
    const float e = expf(-fabsf(z));
    const float l = w * (fmaxf(z, 0.0f) - y * z + log1pf(e));
    // s - y without cancellation (disc_head.h).
    const float ds = (actual ? -1.0f : 1.0f) * (predicted != actual ? 1.0f : e) / (1.0f + e);
    loss[i] = l;
    dlogits[i] = from_float<T>(w * scale * ds);
    sums[kDiscCorrect] += predicted == actual ? w : 0.0f;
    sums[kDiscTruePositive] += predicted && actual ? w : 0.0f;
    sums[kDiscPredictedPositive] += predicted ? w : 0.0f;
    sums[kDiscActualPositive] += actual ? w : 0.0f;
    sums[kDiscWeight] += w;
    sums[kDiscLoss] += l;
  }
#pragma unroll
  for (int c = 0; c < kDiscCounts; ++c) {
    const float total = block_sum(sums[c], scratch);
    if (threadIdx.x == 0) partials[blockIdx.x * int64_t{kDiscCounts} + c] = total;
  }
  if (last_arrival(ticket, gridDim.x)) add_partials(partials, gridDim.x, counts, scratch);
}

template <class T>
void launch(Context& ctx, const T* logits, const Tensor& labels, const Tensor& weights,
            DeviceScalar<float> scale, const Tensor& loss, T* dlogits, const Tensor& counts,
            const Tensor& workspace) {
  const int64_t n = labels.numel();
  const int64_t blocks = disc_head_workspace_size(n) / kDiscCounts;  // > 0: check() refuses n = 0
  // The context's first ticket counter (engine/ticket_counters.h), zero again after the launch.
  disc_head_kernel<T><<<blocks, kDiscHeadThreads, 0, ctx.stream()>>>(
      logits, labels.ptr<int32_t>(), weights.ptr<float>(), scale, n, loss.ptr<float>(), dlogits,
      workspace.ptr<float>(), ticket_counters(ctx), counts.ptr<float>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void DiscHead::cuda(Context& ctx) const {
  check_dtype(loss, DType::F32, "disc_head (cuda) loss");
  check_dtype(counts, DType::F32, "disc_head (cuda) counts");
  cuda::dispatch_activation(logits, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ctx, static_cast<const T*>(logits.data), labels, weights, scale, loss,
                 static_cast<T*>(dlogits.data), counts, workspace);
  });
}

}  // namespace electra
