// masking kernel: one block per sequence, one thread per position (blockDim = T rounded up to a
// warp, T <= 512). Counts come from __syncthreads_count; a candidate's rank among the candidates
// by (key, position) and a chosen position's slot among the chosen ones are O(T) scans of shared
// memory (T^2 = 262k comparisons at T = 512, negligible next to the rest of a step). Everything is
// integer arithmetic, hence bit-identical to the CPU reference.
#include <algorithm>

#include "kernels/cuda_common.cuh"
#include "kernels/masking.h"

namespace electra::cuda {
namespace {

__global__ void __launch_bounds__(kMaskingMaxSeqLen)
    masking_kernel(const int32_t* ids, int seq, int slots, MaskingParams params,
                   uint32_t mask_threshold, uint32_t random_threshold, int32_t* masked_ids,
                   int32_t* positions, int32_t* original, float* weights) {
  __shared__ uint32_t keys[kMaskingMaxSeqLen];
  __shared__ bool candidate[kMaskingMaxSeqLen];
  __shared__ bool chosen[kMaskingMaxSeqLen];
  const RngStream stream = params.stream.resolved();  // the step may live in device memory
  const float mask_prob = params.mask_prob.get();     // so may the rate
  const int b = blockIdx.x, t = threadIdx.x;
  const bool inside = t < seq;
  const int64_t index = static_cast<int64_t>(b) * seq + t;
  const int32_t id = inside ? ids[index] : params.pad_id;
  const bool is_candidate =
      id != params.pad_id && id != params.cls_id && id != params.sep_id;  // false outside
  const uint32_t key = is_candidate ? stream.bits(static_cast<uint64_t>(index)) : 0u;
  if (inside) {
    keys[t] = key;
    candidate[t] = is_candidate;
  }
  const int non_pad = __syncthreads_count(id != params.pad_id);
  const int candidates = __syncthreads_count(is_candidate);
  const int k = min(min(slots, candidates), max(1, masking_target_count(mask_prob, non_pad)));

  int rank = 0;
  if (is_candidate) {
    for (int u = 0; u < seq; ++u) {
      rank += candidate[u] && (keys[u] < key || (keys[u] == key && u < t));
    }
  }
  const bool picked = is_candidate && rank < k;
  if (inside) chosen[t] = picked;
  __syncthreads();

  if (inside) {
    int32_t out = id;
    if (picked) {
      int slot = 0;
      for (int u = 0; u < t; ++u) slot += chosen[u];
      const int64_t s = static_cast<int64_t>(b) * slots + slot;
      positions[s] = t;
      original[s] = id;
      weights[s] = 1.0f;
      out = masked_token(params, stream, mask_threshold, random_threshold,
                         static_cast<uint64_t>(index), id);
    }
    masked_ids[index] = out;
  }
  for (int slot = k + t; slot < slots; slot += blockDim.x) {
    const int64_t s = static_cast<int64_t>(b) * slots + slot;
    positions[s] = 0;
    original[s] = 0;
    weights[s] = 0.0f;
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void MaskTokens::cuda(Context& ctx) const {
  const int64_t batch = ids.dim(0), seq = ids.dim(1), slots = positions.dim(1);
  if (batch == 0) return;
  const int threads = static_cast<int>(std::max<int64_t>(1, cuda::ceil_div(seq, cuda::kWarpSize)) *
                                       cuda::kWarpSize);
  cuda::masking_kernel<<<batch, threads, 0, ctx.stream()>>>(
      ids.ptr<int32_t>(), static_cast<int>(seq), static_cast<int>(slots), params,
      probability_threshold(params.mask_token_prob),
      probability_threshold(params.mask_token_prob + params.random_token_prob),
      masked_ids.ptr<int32_t>(), positions.ptr<int32_t>(), original.ptr<int32_t>(),
      weights.ptr<float>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
