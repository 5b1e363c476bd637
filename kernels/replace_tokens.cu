// replace_tokens kernel: one block per sequence. The block copies the row, scatters the samples
// of its weighted slots (distinct positions, so no two threads write one element), then writes
// the labels. Reads and writes O(B * T) integers: negligible next to the models around it.
#include "kernels/cuda_common.cuh"
#include "kernels/replace_tokens.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void replace_tokens_kernel(const int32_t* ids, const int32_t* positions,
                                      const float* weights, const int32_t* samples,
                                      int32_t* replaced, int32_t* labels, int64_t len,
                                      int64_t slots) {
  const int64_t b = blockIdx.x;
  const int32_t* in = ids + b * len;
  int32_t* out = replaced + b * len;
  for (int64_t t = threadIdx.x; t < len; t += blockDim.x) out[t] = in[t];
  __syncthreads();
  for (int64_t k = threadIdx.x; k < slots; k += blockDim.x) {
    const int32_t p = positions[b * slots + k];
    if (weights[b * slots + k] > 0.0f && p >= 0 && p < len) out[p] = samples[b * slots + k];
  }
  __syncthreads();
  for (int64_t t = threadIdx.x; t < len; t += blockDim.x) labels[b * len + t] = out[t] != in[t];
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void ReplaceTokens::cuda(Context& ctx) const {
  const int64_t batch = ids.dim(0), len = ids.dim(1), slots = positions.dim(1);
  if (batch == 0) return;  // a 0-block grid is an invalid launch configuration
  cuda::replace_tokens_kernel<<<static_cast<unsigned>(batch), cuda::kThreads, 0, ctx.stream()>>>(
      ids.ptr<int32_t>(), positions.ptr<int32_t>(), weights.ptr<float>(), samples.ptr<int32_t>(),
      replaced.ptr<int32_t>(), labels.ptr<int32_t>(), len, slots);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
