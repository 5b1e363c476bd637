// The NCCL communicator (communicator.h): GPU tensors, one GPU per rank. Built only with CUDA and
// NCCL (ELECTRA_NCCL; communicator_nccl_missing.cpp stands in without NCCL), and the only file
// that includes nccl.h.
//
// - Set-up: rank 0 makes the unique id (ncclGetUniqueId), the host communicator (MPI, or single
//   for one rank) broadcasts it, every rank calls ncclCommInitRank on its GPU.
// - Ordering: a collective runs on the communicator's own stream. start_all_reduce() records an
//   event on the caller's stream and makes the NCCL stream wait for it, so the collective sees
//   everything queued before it while the caller's stream goes on (the overlap of the bucketed
//   gradient all-reduce with the rest of the backward). wait() records an event on the NCCL
//   stream and makes the caller's stream wait for it.
// - Failure: NCCL kernels wait for their peers without a time limit, so wait() also polls on the
//   host until the collectives are done, checking ncclCommGetAsyncError (a peer's connection
//   dropped) and the timeout; either aborts the NCCL communicator (which frees the kernels) and
//   throws Error, and the caller then aborts the job. The host would block right afterwards
//   anyway (the optimizer reads a value back every step), so the poll costs no overlap.
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "engine/communicator.h"
#include "engine/cuda_check.h"
#include "engine/runtime_versions.h"

#define ELECTRA_NCCL_CHECK(call)                                                                   \
  do {                                                                                             \
    ncclResult_t electra_status_ = (call);                                                         \
    if (electra_status_ != ncclSuccess) {                                                          \
      ::electra::throw_api_failure("NCCL", #call, static_cast<long>(electra_status_),              \
                                   ncclGetErrorString(electra_status_), ncclGetLastError(nullptr), \
                                   __FILE__, __LINE__);                                            \
    }                                                                                              \
  } while (0)

namespace electra {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return ncclFloat32;
    case DType::F64:
      return ncclFloat64;
    case DType::I32:
      return ncclInt32;
    case DType::BF16:
      return ncclBfloat16;
    case DType::F16:
      return ncclFloat16;
    default:
      throw Error(str_cat("NCCL communicator: dtype ", dtype_name(dtype), " is not supported"));
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::unique_ptr<Communicator> host, int cuda_device, double timeout_seconds)
      : Communicator(host->rank(), host->size(), host->local_rank(), host->local_size()),
        host_(std::move(host)),
        device_(cuda_device),
        timeout_seconds_(timeout_seconds) {
    ELECTRA_CHECK(timeout_seconds > 0, "NCCL communicator: timeout ", timeout_seconds);
    // ncclUniqueId is 128 opaque bytes: broadcast as 16 u64.
    static_assert(sizeof(ncclUniqueId) % sizeof(uint64_t) == 0);
    uint64_t words[sizeof(ncclUniqueId) / sizeof(uint64_t)] = {};
    ncclUniqueId id;
    if (rank() == 0) {
      ELECTRA_NCCL_CHECK(ncclGetUniqueId(&id));
      std::memcpy(words, &id, sizeof id);
    }
    host_->broadcast_host(words, 0);
    std::memcpy(&id, words, sizeof id);
    ELECTRA_CUDA_CHECK(cudaSetDevice(device_));
    ELECTRA_NCCL_CHECK(ncclCommInitRank(&comm_, size(), id, rank()));
    ELECTRA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ELECTRA_CUDA_CHECK(cudaEventCreateWithFlags(&before_, cudaEventDisableTiming));
    ELECTRA_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }

  ~NcclCommunicator() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (done_ != nullptr) cudaEventDestroy(done_);
    if (before_ != nullptr) cudaEventDestroy(before_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  const char* backend() const override { return "nccl"; }

  void start_all_reduce(const Tensor& data, ReduceOp op, cudaStream_t stream) override {
    check_tensor(data);
    after(stream);
    ELECTRA_NCCL_CHECK(ncclAllReduce(data.data, data.data, static_cast<size_t>(data.numel()),
                                     nccl_type(data.dtype),
                                     op == ReduceOp::kSum ? ncclSum : ncclAvg, comm_, stream_));
  }

  void wait(cudaStream_t stream) override {
    ELECTRA_CHECK(comm_ != nullptr, "NCCL communicator used after an abort");
    ELECTRA_CUDA_CHECK(cudaEventRecord(done_, stream_));
    ELECTRA_CUDA_CHECK(cudaStreamWaitEvent(stream, done_, 0));
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t status = cudaEventQuery(done_);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) ELECTRA_CUDA_CHECK(status);
      ncclResult_t async = ncclSuccess;
      ELECTRA_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
      if (async != ncclSuccess && async != ncclInProgress) {
        abort_comm();
        throw Error(str_cat("NCCL: rank ", rank(), " of ", size(),
                            ": a collective failed asynchronously (", ncclGetErrorString(async),
                            "): another rank probably died"));
      }
      const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
      if (waited.count() > timeout_seconds_) {
        abort_comm();
        throw Error(str_cat("NCCL: rank ", rank(), " of ", size(), ": a collective did not finish ",
                            "within ", timeout_seconds_,
                            " s (distributed.timeout_s): another rank died or hangs"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void broadcast(const Tensor& data, int root, cudaStream_t stream) override {
    check_tensor(data);
    after(stream);
    ELECTRA_NCCL_CHECK(ncclBroadcast(data.data, data.data, static_cast<size_t>(data.numel()),
                                     nccl_type(data.dtype), root, comm_, stream_));
    wait(stream);
  }

  void all_reduce_host(std::span<double> values, ReduceOp op) override {
    host_->all_reduce_host(values, op);
  }
  void broadcast_host(std::span<uint64_t> values, int root) override {
    host_->broadcast_host(values, root);
  }
  void barrier() override { host_->barrier(); }

 protected:
  void abort_job(int exit_code) override {
    abort_comm();
    host_->abort(exit_code);
  }

 private:
  void check_tensor(const Tensor& data) const {
    ELECTRA_CHECK(comm_ != nullptr, "NCCL communicator used after an abort");
    ELECTRA_CHECK(data.device == Device::CUDA, "NCCL communicator: a ", device_name(data.device),
                  " tensor");
  }

  // Orders the next collective after the work queued on `stream`.
  void after(cudaStream_t stream) {
    ELECTRA_CUDA_CHECK(cudaEventRecord(before_, stream));
    ELECTRA_CUDA_CHECK(cudaStreamWaitEvent(stream_, before_, 0));
  }

  void abort_comm() noexcept {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  std::unique_ptr<Communicator> host_;
  int device_;
  double timeout_seconds_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t before_ = nullptr;
  cudaEvent_t done_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     int cuda_device, double timeout_seconds) {
  ELECTRA_CHECK(host != nullptr, "make_nccl_communicator: no host communicator");
  return std::make_unique<NcclCommunicator>(std::move(host), cuda_device, timeout_seconds);
}

std::string nccl_runtime_version() {
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  int code = 0;
  ELECTRA_NCCL_CHECK(ncclGetVersion(&code));
  return str_cat(code / 10000, ".", code / 100 % 100, ".", code % 100);
}

}  // namespace electra
