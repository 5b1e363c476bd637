// Context: what every op receives first. It carries the device, the CUDA stream, the cuBLASLt
// handle and its workspace (CUDA only), the CPU path's thread pool (CPU only), the compute
// precision and the RNG key. A CUDA context owns its stream, handle and workspace and releases
// them on destruction. (No cuDNN: no op uses it, and
// a hard dependency on libcudnn would break every binary on a machine where it is missing.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/device.h"
#include "engine/philox.h"
#include "engine/thread_pool.h"

struct cublasLtContext;
typedef struct cublasLtContext* cublasLtHandle_t;

namespace electra {

// Compute precision of activations and matmul inputs. Master weights, optimizer state, softmax,
// layernorm statistics and losses are always f32 (f64 in gradient checks).
// bf16 is the mixed precision (sm_80 and newer); there is no f16 mode.
enum class Precision : uint8_t { F64, F32, BF16 };
const char* precision_name(Precision precision);

// The cuBLASLt workspace of a CUDA context: 32 MiB, the recommendation for Hopper (cuBLAS docs,
// "cublasLtMatmul").
constexpr size_t kCublasLtWorkspaceBytes = size_t{32} << 20;

class Context {
 public:
  // A CPU context whose ops run on `threads` threads (0: available_cores()).
  static Context cpu(uint64_t seed = 0, Precision precision = Precision::F32, int threads = 1);
  // A context on CUDA device `index`: creates a stream, a cuBLASLt handle and its workspace. Throws
  // Error without CUDA or without that device.
  static Context cuda(int index = 0, uint64_t seed = 0, Precision precision = Precision::F32);

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;

  Device device() const { return device_; }
  bool is_cuda() const { return device_ == Device::CUDA; }
  int device_index() const { return device_index_; }
  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t cublaslt() const { return cublaslt_; }
  // cuBLASLt's scratch; the CUDA bias_grad also borrows it for partial sums (same stream).
  void* cublaslt_workspace() const { return workspace_; }
  size_t cublaslt_workspace_bytes() const { return workspace_bytes_; }

  Precision precision() const { return precision_; }
  void set_precision(Precision precision) { precision_ = precision; }
  uint64_t seed() const { return seed_; }
  void set_seed(uint64_t seed) { seed_ = seed; }
  uint32_t rank() const { return rank_; }
  void set_rank(uint32_t rank) { rank_ = rank; }

  // The RNG stream for (this context's seed and rank, purpose, step).
  RngStream rng(RngPurpose purpose, uint32_t step) const {
    return RngStream{seed_, purpose, step, rank_};
  }

  // The CPU threads the ops use (1 on a CUDA context: the pool is the CPU path's).
  int threads() const { return pool_ ? pool_->threads() : 1; }
  // Replaces the CPU thread pool by one of `threads` threads (0: available_cores()); a CUDA
  // context ignores it. Not inside a training step: it starts threads.
  void set_threads(int threads);

  // Runs fn(i) for every i < tasks on the CPU threads (ThreadPool::parallel_for: the caller's
  // partition must not depend on the thread count; each task writes its own outputs).
  template <class F>
  void parallel_for(int64_t tasks, F&& fn) const {
    if (pool_) {
      pool_->parallel_for(tasks, fn);
    } else {
      for (int64_t i = 0; i < tasks; ++i) fn(i);
    }
  }
  // fn(begin, end) over [0, n) in consecutive ranges of `block` (the last may be shorter).
  template <class F>
  void parallel_ranges(int64_t n, int64_t block, F&& fn) const {
    parallel_for((n + block - 1) / block,
                 [&](int64_t task) { fn(task * block, std::min(n, (task + 1) * block)); });
  }

  // Waits for all work queued on the stream (no-op on the CPU).
  void synchronize() const;

 private:
  Context() = default;
  void release() noexcept;

  Device device_ = Device::CPU;
  int device_index_ = -1;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  Precision precision_ = Precision::F32;
  uint64_t seed_ = 0;
  uint32_t rank_ = 0;
  std::unique_ptr<ThreadPool> pool_;  // CPU contexts with more than one thread
};

}  // namespace electra
