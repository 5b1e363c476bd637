#include "engine/timer.h"

#if ELECTRA_WITH_CUDA
#include "engine/cuda_check.h"
#endif

namespace electra {

#if ELECTRA_WITH_CUDA
CudaEventTimer::CudaEventTimer(cudaStream_t stream) : stream_(stream) {
  ELECTRA_CUDA_CHECK(cudaEventCreate(&start_));
  ELECTRA_CUDA_CHECK(cudaEventCreate(&stop_));
}
CudaEventTimer::~CudaEventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}
void CudaEventTimer::start() {
  ELECTRA_CUDA_CHECK(cudaEventRecord(start_, stream_));
}
void CudaEventTimer::stop() {
  ELECTRA_CUDA_CHECK(cudaEventRecord(stop_, stream_));
}
float CudaEventTimer::milliseconds() const {
  ELECTRA_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  ELECTRA_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}
#else
CudaEventTimer::CudaEventTimer(cudaStream_t stream) : stream_(stream) {
  throw Error("CudaEventTimer: built without CUDA (ELECTRA_CUDA=OFF)");
}
CudaEventTimer::~CudaEventTimer() = default;
void CudaEventTimer::start() {}
void CudaEventTimer::stop() {}
float CudaEventTimer::milliseconds() const {
  return 0;
}
#endif

}  // namespace electra
