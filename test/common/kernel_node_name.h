// The driver's name of a captured kernel node's function (the project's kernels and the
// libraries' alike), through the runtime's cudaGetDriverEntryPointByVersion: the binaries do not
// link libcuda, so that they load, and skip, on a machine without a driver. On a GPU the name is
// mangled; the SIMT emulator gives the kernel's source text (docs/ARCHITECTURE.md, "The SIMT
// emulator"). Used by launch_count_gpu_test and simt_test.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace electra::test {

// A driver API function; throws when the runtime does not have it.
template <class F>
F* driver_function(const char* symbol) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult found{};
  // 12.3: the first version with cuFuncGetName and cuKernelGetName.
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion(symbol, &f, 12030, cudaEnableDefault, &found);
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || f == nullptr) {
    throw std::runtime_error(std::string("no driver function ") + symbol);
  }
  return reinterpret_cast<F*>(f);
}

// The name of a kernel node's function, or "" when the node has none the driver can say (a copy,
// a memset, an unnamed launch).
inline std::string kernel_node_name(cudaGraphNode_t node) {
  static auto* get_params =
      driver_function<decltype(cuGraphKernelNodeGetParams)>("cuGraphKernelNodeGetParams");
  static auto* func_name = driver_function<decltype(cuFuncGetName)>("cuFuncGetName");
  static auto* get_kernel_name = driver_function<decltype(cuKernelGetName)>("cuKernelGetName");
  CUDA_KERNEL_NODE_PARAMS params{};
  if (get_params(node, &params) != CUDA_SUCCESS) return "";
  const char* name = nullptr;
  if (params.func != nullptr) {
    if (func_name(&name, params.func) != CUDA_SUCCESS) return "";
  } else if (params.kern != nullptr) {
    if (get_kernel_name(&name, params.kern) != CUDA_SUCCESS) return "";
  }
  return name != nullptr ? name : "";
}

}  // namespace electra::test
