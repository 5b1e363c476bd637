// Whether a GPU test that finds no usable CUDA device is skipped or failed. Skipping is right on a
// machine without an NVIDIA device; on a machine that has one (/dev/nvidia0 exists, or
// ELECTRA_EXPECT_GPU=1) a driver or runtime error, e.g. a driver older than the toolkit, must fail
// loudly instead of being reported as a skipped test.
#pragma once

#include <cstring>

namespace electra::test {

enum class NoGpuVerdict { kSkip, kFail };

// built_with_cuda: this binary has the CUDA kernels (a CPU-only build always skips);
// device_node_exists: /dev/nvidia0 is present; expect_gpu_env: getenv("ELECTRA_EXPECT_GPU").
inline NoGpuVerdict no_gpu_verdict(bool built_with_cuda, bool device_node_exists,
                                   const char* expect_gpu_env) {
  const bool expected =
      device_node_exists || (expect_gpu_env != nullptr && std::strcmp(expect_gpu_env, "1") == 0);
  return built_with_cuda && expected ? NoGpuVerdict::kFail : NoGpuVerdict::kSkip;
}

}  // namespace electra::test
