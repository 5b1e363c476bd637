// Raw device access that the rest of the engine builds on. In a CPU-only build every CUDA entry
// point throws Error("built without CUDA") and cuda_device_count() is 0.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Free and total memory of device `index` in bytes (cudaMemGetInfo); throws without CUDA.
void cuda_memory_info(int index, size_t* free_bytes, size_t* total_bytes);

void* cuda_malloc(size_t bytes);
void cuda_free(void* ptr) noexcept;

// Copies src into dst (same dtype and element count; any devices) on `stream` and waits for it.
void copy_tensor(cudaStream_t stream, const Tensor& dst, const Tensor& src);

// Host/device transfers of the training path. `upload` copies host memory into a tensor of the
// context's device without waiting (src must stay untouched until the stream has passed the copy:
// on CUDA it should be pinned, see PinnedBuffer); `download` copies a tensor into host memory and
// waits. On a CPU context both are memcpys. Both are counted by the transfer counter, whatever the
// devices: on the CPU build the counter proves what a GPU run would transfer.
void upload(cudaStream_t stream, const Tensor& dst, const Tensor& src);
void download(cudaStream_t stream, const Tensor& dst, const Tensor& src);

// The transfer counter: uploads and downloads (count and bytes) per stream. Off by default, and
// then it costs one relaxed atomic load per transfer.
struct TransferCounts {
  int64_t uploads = 0, upload_bytes = 0;
  int64_t downloads = 0, download_bytes = 0;
};
void set_transfer_counting(bool on);
// The counts of `stream` since counting was last switched on (zero when off or never used).
TransferCounts transfer_counts(cudaStream_t stream);

// An event on a stream, to know when the host may reuse a staging buffer: record() after the
// upload from it, wait() before writing it again (it returns at once when the stream has passed
// the copy, which double buffering makes the normal case). No-ops on the CPU.
class HostEvent {
 public:
  HostEvent() = default;
  ~HostEvent();
  HostEvent(const HostEvent&) = delete;
  HostEvent& operator=(const HostEvent&) = delete;

  void record(cudaStream_t stream);
  void wait();

 private:
  // Used by the CUDA build only (a CPU-only build's record and wait do nothing).
  [[maybe_unused]] cudaEvent_t event_ = nullptr;
  [[maybe_unused]] bool recorded_ = false;
};

// Page-locked host memory (plain host memory on a CPU-only build or for a CPU context): the
// staging buffers of asynchronous uploads.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, bool pinned);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool pinned_ = false;
};
// Fills t with 0xFF bytes (NaN for floating types) so a test notices outputs never written.
void poison_tensor(cudaStream_t stream, const Tensor& t);
// Fills t with zero bytes (one memset, which an op observer sees: engine/op_observer.h).
void zero_tensor(cudaStream_t stream, const Tensor& t);

}  // namespace electra
