#include "engine/device.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "engine/op_observer.h"

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

void cuda_memory_info(int index, size_t* free_bytes, size_t* total_bytes) {
  ELECTRA_CUDA_CHECK(cudaSetDevice(index));
  ELECTRA_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
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

static void copy_async(cudaStream_t stream, const Tensor& dst, const Tensor& src) {
  ELECTRA_CHECK(dst.dtype == src.dtype && dst.numel() == src.numel(), "copy: ", dst.str(), " <- ",
                src.str());
  if (dst.device == Device::CPU && src.device == Device::CPU) {
    std::memcpy(dst.data, src.data, src.nbytes());
    return;
  }
  ELECTRA_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.nbytes(), cudaMemcpyDefault, stream));
}

static void* host_alloc(size_t bytes, bool pinned) {
  if (!pinned) return std::malloc(bytes);
  void* ptr = nullptr;
  ELECTRA_CUDA_CHECK(cudaMallocHost(&ptr, bytes));
  return ptr;
}

static void host_free(void* ptr, bool pinned) noexcept {
  if (pinned) {
    cudaFreeHost(ptr);
  } else {
    std::free(ptr);
  }
}

HostEvent::~HostEvent() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

void HostEvent::record(cudaStream_t stream) {
  if (stream == nullptr) return;  // a CPU context
  if (event_ == nullptr) {
    ELECTRA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ELECTRA_CUDA_CHECK(cudaEventRecord(event_, stream));
  recorded_ = true;
}

void HostEvent::wait() {
  if (recorded_) ELECTRA_CUDA_CHECK(cudaEventSynchronize(event_));
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
void cuda_memory_info(int, size_t*, size_t*) {
  throw Error("cuda_memory_info: built without CUDA (ELECTRA_CUDA=OFF)");
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

static void copy_async(cudaStream_t stream, const Tensor& dst, const Tensor& src) {
  copy_tensor(stream, dst, src);
}

static void* host_alloc(size_t bytes, bool) {
  return std::malloc(bytes);
}

static void host_free(void* ptr, bool) noexcept {
  std::free(ptr);
}

HostEvent::~HostEvent() = default;
void HostEvent::record(cudaStream_t) {}
void HostEvent::wait() {}

static void fill_bytes(cudaStream_t, const Tensor& t, int byte) {
  ELECTRA_CHECK(t.device == Device::CPU, "CUDA tensor in a build without CUDA");
  std::memset(t.data, byte, t.nbytes());
}

#endif

namespace {

std::atomic<bool> g_counting{false};
std::mutex g_counts_mutex;
std::map<cudaStream_t, TransferCounts> g_counts;

void count_transfer(cudaStream_t stream, bool up, size_t bytes) {
  if (!g_counting.load(std::memory_order_relaxed)) return;
  const std::lock_guard<std::mutex> lock(g_counts_mutex);
  TransferCounts& c = g_counts[stream];
  if (up) {
    ++c.uploads;
    c.upload_bytes += static_cast<int64_t>(bytes);
  } else {
    ++c.downloads;
    c.download_bytes += static_cast<int64_t>(bytes);
  }
}

}  // namespace

void set_transfer_counting(bool on) {
  const std::lock_guard<std::mutex> lock(g_counts_mutex);
  if (on) g_counts.clear();
  g_counting.store(on, std::memory_order_relaxed);
}

TransferCounts transfer_counts(cudaStream_t stream) {
  const std::lock_guard<std::mutex> lock(g_counts_mutex);
  const auto it = g_counts.find(stream);
  return it == g_counts.end() ? TransferCounts{} : it->second;
}

void upload(cudaStream_t stream, const Tensor& dst, const Tensor& src) {
  count_transfer(stream, true, src.nbytes());
  copy_async(stream, dst, src);
}

void download(cudaStream_t stream, const Tensor& dst, const Tensor& src) {
  count_transfer(stream, false, src.nbytes());
  copy_tensor(stream, dst, src);
}

PinnedBuffer::PinnedBuffer(size_t bytes, bool pinned)
    : data_(host_alloc(bytes, pinned)), bytes_(bytes), pinned_(pinned) {
  ELECTRA_CHECK(data_ != nullptr || bytes == 0, "PinnedBuffer: cannot allocate ", bytes, " bytes");
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) host_free(data_, pinned_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      pinned_(other.pinned_) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) host_free(data_, pinned_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pinned_ = other.pinned_;
  }
  return *this;
}

void poison_tensor(cudaStream_t stream, const Tensor& t) {
  fill_bytes(stream, t, 0xFF);
}
void zero_tensor(cudaStream_t stream, const Tensor& t) {
  if (OpObserver* observer = op_observer(); observer != nullptr) observer->memset(t.nbytes());
  fill_bytes(stream, t, 0);
}

}  // namespace electra
