// The NVIDIA driver and the CUDA libraries as this process finds them at run time: a binary built
// with one toolkit runs with whatever driver and libraries the machine has, and these are the
// ones its GPU code uses (`electra version`, the first lines of `electra pretrain`).
#pragma once

#include <string>

namespace electra {

struct RuntimeVersions {
  std::string driver;        // "580.159.04 (CUDA 13.0)", or "none found"
  std::string cuda_runtime;  // "13.0" (cudaRuntimeGetVersion)
  std::string cublas;        // "13.1.0" (cublasGetProperty)
  std::string cublaslt;      // "13.1.0" (cublasLtGetVersion)
  std::string nccl;          // "2.28.9" (ncclGetVersion), or why there is none
};

// Asks the loaded libraries and the driver; needs no GPU. A CPU-only build has no CUDA libraries
// ("not built") but still reports the driver.
RuntimeVersions runtime_versions();

// The kernel module's version in the text of /proc/driver/nvidia/version ("NVRM version: NVIDIA
// UNIX x86_64 Kernel Module  580.159.04  Thu Oct ..."): the first number with a dot on the NVRM
// line; "" when there is none.
std::string nvidia_module_version(const std::string& proc_text);

// NCCL's part of runtime_versions(), defined by the file that knows whether NCCL is linked:
// communicator_nccl_cuda.cpp, or communicator_nccl_missing.cpp in a build without NCCL.
std::string nccl_runtime_version();

}  // namespace electra
