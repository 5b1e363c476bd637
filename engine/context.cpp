#include "engine/context.h"

#include <utility>

#include "engine/ticket_counters.h"

#if ELECTRA_WITH_CUDA
#include "engine/cuda_check.h"
#endif

namespace electra {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::F64:
      return "f64";
    case Precision::F32:
      return "f32";
    case Precision::BF16:
      return "bf16";
  }
  return "?";
}

Context Context::cpu(uint64_t seed, Precision precision, int threads) {
  Context ctx;
  ctx.device_ = Device::CPU;
  ctx.seed_ = seed;
  ctx.precision_ = precision;
  ctx.set_threads(threads);
  return ctx;
}

void Context::set_threads(int threads) {
  ELECTRA_CHECK(threads >= 0, "Context::set_threads(", threads, ")");
  if (device_ != Device::CPU) return;
  const int n = threads == 0 ? available_cores() : threads;
  pool_.reset();
  if (n > 1) pool_ = std::make_unique<ThreadPool>(n);
}

Context Context::cuda(int index, uint64_t seed, Precision precision) {
#if ELECTRA_WITH_CUDA
  const int count = cuda_device_count();
  ELECTRA_CHECK(index >= 0 && index < count, "CUDA device ", index, " requested, ", count,
                " present (", cuda_unavailable_reason(), ")");
  Context ctx;
  ctx.device_ = Device::CUDA;
  ctx.device_index_ = index;
  ctx.seed_ = seed;
  ctx.precision_ = precision;
  ELECTRA_CUDA_CHECK(cudaSetDevice(index));
  ELECTRA_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream_, cudaStreamNonBlocking));
  ELECTRA_CUBLAS_CHECK(cublasLtCreate(&ctx.cublaslt_));
  // cuBLASLt is given kCublasLtWorkspaceBytes; the ticket counters follow, zeroed once
  // (engine/ticket_counters.h).
  ctx.workspace_bytes_ = kCublasLtWorkspaceBytes;
  ctx.workspace_ = cuda_malloc(ctx.workspace_bytes_ + kTicketCounterBytes);
  ELECTRA_CUDA_CHECK(cudaMemsetAsync(ticket_counters(ctx), 0, kTicketCounterBytes, ctx.stream_));
  return ctx;
#else
  (void)index;
  (void)seed;
  (void)precision;
  throw Error("Context::cuda: built without CUDA (ELECTRA_CUDA=OFF)");
#endif
}

Context::~Context() {
  release();
}

Context::Context(Context&& other) noexcept {
  *this = std::move(other);
}

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    device_index_ = other.device_index_;
    stream_ = std::exchange(other.stream_, nullptr);
    cublaslt_ = std::exchange(other.cublaslt_, nullptr);
    workspace_ = std::exchange(other.workspace_, nullptr);
    workspace_bytes_ = std::exchange(other.workspace_bytes_, 0);
    precision_ = other.precision_;
    seed_ = other.seed_;
    rank_ = other.rank_;
    pool_ = std::move(other.pool_);
  }
  return *this;
}

void Context::release() noexcept {
#if ELECTRA_WITH_CUDA
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (workspace_ != nullptr) cuda_free(workspace_);
  if (cublaslt_ != nullptr) cublasLtDestroy(cublaslt_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
#endif
  workspace_ = nullptr;
  cublaslt_ = nullptr;
  stream_ = nullptr;
}

void Context::synchronize() const {
#if ELECTRA_WITH_CUDA
  if (stream_ != nullptr) ELECTRA_CUDA_CHECK(cudaStreamSynchronize(stream_));
#endif
}

}  // namespace electra
