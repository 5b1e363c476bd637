// The current device's streaming-multiprocessor count, for launchers that choose a kernel variant
// by how many warps a launch gives each SM (kernels/gelu.cu). Cached per device after the first
// call, so a launch inside a training step or a CUDA-graph capture makes no driver query.
#pragma once

#include <array>
#include <atomic>

#include "engine/cuda_check.h"
#include "engine/error.h"

namespace electra::cuda {

inline int sm_count() {
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<int>, kMaxDevices> cached{};  // 0: not asked yet
  int device = 0;
  ELECTRA_CUDA_CHECK(cudaGetDevice(&device));
  ELECTRA_CHECK(device < kMaxDevices, "sm_count: device ", device, " of more than ", kMaxDevices);
  int count = cached[device].load(std::memory_order_relaxed);
  if (count == 0) {
    ELECTRA_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    cached[device].store(count, std::memory_order_relaxed);
  }
  return count;
}

}  // namespace electra::cuda
