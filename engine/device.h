// Raw device access that the rest of the engine builds on. In a CPU-only build every CUDA entry
// point throws Error("built without CUDA") and cuda_device_count() is 0.
#pragma once

#include <cstddef>
#include <string>

#include "engine/tensor.h"

// Opaque CUDA handle types, declared here so that headers stay free of CUDA includes (these
// typedefs are identical to the toolkit's, which makes redeclaration legal).
struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;
struct CUevent_st;
typedef struct CUevent_st* cudaEvent_t;

namespace electra {

// True when this binary was compiled with CUDA support.
constexpr bool built_with_cuda() {
  return ELECTRA_WITH_CUDA != 0;
}

// Number of usable CUDA devices (0 without CUDA, without a driver, or without a GPU).
int cuda_device_count();
// One line describing why no GPU can be used, or "" when one can.
std::string cuda_unavailable_reason();
// "NVIDIA H200 (sm_90, 139 GiB)" for device `index`.
std::string cuda_device_description(int index);

void* cuda_malloc(size_t bytes);
void cuda_free(void* ptr) noexcept;

// Copies src into dst (same dtype and element count; any devices) on `stream` and waits for it.
void copy_tensor(cudaStream_t stream, const Tensor& dst, const Tensor& src);
// Fills t with 0xFF bytes (NaN for floating types) so a test notices outputs never written.
void poison_tensor(cudaStream_t stream, const Tensor& t);
// Fills t with zero bytes.
void zero_tensor(cudaStream_t stream, const Tensor& t);

}  // namespace electra
