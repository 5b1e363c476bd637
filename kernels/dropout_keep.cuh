// The dropout mask of kernels/dropout_mask.h for V consecutive elements of a site, in the kernels
// that drop inside another pass (layernorm's fused residual forward and backward, the LayerNorm
// backward's dy dropout, the embedding forward).
#pragma once

#include "kernels/cuda_common.cuh"
#include "kernels/dropout.h"

namespace electra::cuda {

// Bit j set <=> element index0 + j of the site survives, for j < V <= 32: for V % 4 == 0, one
// Philox call per 4 elements when 4-aligned (dropout_keep4, two straddled blocks otherwise).
template <int V>
__device__ __forceinline__ uint32_t keep_bits(const DropoutSite& site, uint64_t index0) {
  static_assert(V <= 32);
  const uint64_t first = site.offset + index0;
  uint32_t bits = 0;
  if constexpr (V % 4 == 0) {
    for (int q = 0; q < V / 4; ++q)
      bits |= dropout_keep4(site.stream, first + 4 * q, site.p) << 4 * q;
  } else {
    for (int j = 0; j < V; ++j) bits |= uint32_t{dropout_keep(site.stream, first + j, site.p)} << j;
  }
  return bits;
}

// keep[j] for flat indices index0 .. index0 + V - 1 (keep_bits as an array).
template <int V>
__device__ __forceinline__ void keep_mask(const DropoutSite& site, uint64_t index0, bool* keep) {
  const uint32_t bits = keep_bits<V>(site, index0);
  for (int j = 0; j < V; ++j) keep[j] = (bits >> j) & 1u;
}

}  // namespace electra::cuda
