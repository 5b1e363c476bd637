// The SIMT emulator's host side (docs/ARCHITECTURE.md, "The SIMT emulator"): the CUDA runtime
// and cuBLASLt calls of a simt build run their work on the host, synchronously, or record it while
// a stream is being captured into a graph.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>

namespace simt {

// Runs `work` now, or appends it to the graph being captured on `stream` as a node of `type`
// (a kernel node named `name`: what the driver API's cuFuncGetName gives, "" for none).
void submit(cudaStream_t stream, std::function<void()> work,
            cudaGraphNodeType type = cudaGraphNodeTypeKernel, std::string name = {});

// What cudaGetLastError reports next (a launch's configuration error).
void set_last_error(cudaError_t error);

// cudaFuncAttributeMaxDynamicSharedMemorySize of a kernel (48 KiB unless raised).
void set_max_dynamic_shared(const void* kernel, size_t bytes);
size_t max_dynamic_shared(const void* kernel);

}  // namespace simt
