// Timers: a steady-clock stopwatch for host work and a CUDA-event timer for work on a stream.
#pragma once

#include <chrono>

#include "engine/device.h"

namespace electra {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Records events on a stream: start(), stop(), then milliseconds() waits for the stop event.
// Throws Error in a build without CUDA.
class CudaEventTimer {
 public:
  explicit CudaEventTimer(cudaStream_t stream);
  ~CudaEventTimer();
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  void start();
  void stop();
  float milliseconds() const;

 private:
  // Used by the CUDA build only.
  [[maybe_unused]] cudaStream_t stream_;
  [[maybe_unused]] cudaEvent_t start_ = nullptr;
  [[maybe_unused]] cudaEvent_t stop_ = nullptr;
};

}  // namespace electra
