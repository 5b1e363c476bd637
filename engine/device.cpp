#include "engine/device.h"

#include <cstring>

#if ELECTRA_WITH_CUDA
#include "engine/cuda_check.h"
#endif

namespace electra {

#if ELECTRA_WITH_CUDA

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device/driver" error
    return 0;
  }
  return count;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return str_cat("no usable CUDA device (", cudaGetErrorString(status), ")");
  }
  return count == 0 ? "no CUDA device present" : "";
}

std::string cuda_device_description(int index) {
  cudaDeviceProp prop{};
  ELECTRA_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  return str_cat(prop.name, " (sm_", prop.major, prop.minor, ", ", prop.totalGlobalMem >> 30,
                 " GiB)");
}

void* cuda_malloc(size_t bytes) {
  void* ptr = nullptr;
  ELECTRA_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  return ptr;
}

void cuda_free(void* ptr) noexcept {
  cudaFree(ptr);
}

void copy_tensor(cudaStream_t stream, const Tensor& dst, const Tensor& src) {
  ELECTRA_CHECK(dst.dtype == src.dtype && dst.numel() == src.numel(), "copy_tensor: ", dst.str(),
                " <- ", src.str());
  if (dst.device == Device::CPU && src.device == Device::CPU) {
    std::memcpy(dst.data, src.data, src.nbytes());
    return;
  }
  ELECTRA_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.nbytes(), cudaMemcpyDefault, stream));
  ELECTRA_CUDA_CHECK(cudaStreamSynchronize(stream));
}

static void fill_bytes(cudaStream_t stream, const Tensor& t, int byte) {
  if (t.device == Device::CPU) {
    std::memset(t.data, byte, t.nbytes());
    return;
  }
  ELECTRA_CUDA_CHECK(cudaMemsetAsync(t.data, byte, t.nbytes(), stream));
}

#else

int cuda_device_count() {
  return 0;
}
std::string cuda_unavailable_reason() {
  return "built without CUDA (ELECTRA_CUDA=OFF)";
}
std::string cuda_device_description(int) {
  throw Error("built without CUDA (ELECTRA_CUDA=OFF)");
}
void* cuda_malloc(size_t) {
  throw Error("cuda_malloc: built without CUDA (ELECTRA_CUDA=OFF)");
}
void cuda_free(void*) noexcept {}

void copy_tensor(cudaStream_t, const Tensor& dst, const Tensor& src) {
  ELECTRA_CHECK(dst.dtype == src.dtype && dst.numel() == src.numel(), "copy_tensor: ", dst.str(),
                " <- ", src.str());
  ELECTRA_CHECK(dst.device == Device::CPU && src.device == Device::CPU,
                "copy_tensor: CUDA tensor in a build without CUDA");
  std::memcpy(dst.data, src.data, src.nbytes());
}

static void fill_bytes(cudaStream_t, const Tensor& t, int byte) {
  ELECTRA_CHECK(t.device == Device::CPU, "CUDA tensor in a build without CUDA");
  std::memset(t.data, byte, t.nbytes());
}

#endif

void poison_tensor(cudaStream_t stream, const Tensor& t) {
  fill_bytes(stream, t, 0xFF);
}
void zero_tensor(cudaStream_t stream, const Tensor& t) {
  fill_bytes(stream, t, 0);
}

}  // namespace electra
