// The MPI communicator (communicator.h): CPU tensors over a duplicate of MPI_COMM_WORLD whose
// error handler returns codes (MPI_ERRORS_RETURN), so a failed call throws Error through
// ELECTRA_MPI_CHECK instead of killing the job without a message. Compiled only with MPI.
//
// Averages are sums divided by the size on the host (MPI has no average operation). Messages
// longer than INT_MAX elements are split, since MPI counts are int.
#if ELECTRA_WITH_MPI
#include <algorithm>
#include <climits>
#include <iterator>

#include "engine/communicator.h"
#include "engine/mpi_check.h"

namespace electra {
namespace {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return MPI_FLOAT;
    case DType::F64:
      return MPI_DOUBLE;
    case DType::I32:
      return MPI_INT32_T;
    default:
      throw Error(str_cat("MPI communicator: dtype ", dtype_name(dtype), " is not supported"));
  }
}

template <class T>
void divide(void* data, int64_t n, int size) {
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < n; ++i) p[i] /= static_cast<T>(size);
}

// Initialises MPI when nobody has and finalises it on destruction then; the world communicator's
// rank, size and node-local rank.
class MpiCommunicator final : public Communicator {
 public:
  static std::unique_ptr<Communicator> create() {
    int initialized = 0;
    ELECTRA_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) ELECTRA_MPI_CHECK(MPI_Init(nullptr, nullptr));
    MPI_Comm world = MPI_COMM_NULL, local = MPI_COMM_NULL;
    ELECTRA_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
    ELECTRA_MPI_CHECK(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
    int rank = 0, size = 0, local_rank = 0, local_size = 0;
    ELECTRA_MPI_CHECK(MPI_Comm_rank(world, &rank));
    ELECTRA_MPI_CHECK(MPI_Comm_size(world, &size));
    ELECTRA_MPI_CHECK(
        MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
    ELECTRA_MPI_CHECK(MPI_Comm_rank(local, &local_rank));
    ELECTRA_MPI_CHECK(MPI_Comm_size(local, &local_size));
    ELECTRA_MPI_CHECK(MPI_Comm_free(&local));
    return std::unique_ptr<Communicator>(
        new MpiCommunicator(world, !initialized, rank, size, local_rank, local_size));
  }

  ~MpiCommunicator() override {
    MPI_Comm_free(&comm_);
    if (finalize_) MPI_Finalize();
  }

  const char* backend() const override { return "mpi"; }

  void start_all_reduce(const Tensor& data, ReduceOp op, cudaStream_t) override {
    ELECTRA_CHECK(data.device == Device::CPU, "MPI communicator: a ", device_name(data.device),
                  " tensor (MPI reduces CPU tensors; GPU runs use NCCL)");
    const MPI_Datatype type = mpi_type(data.dtype);
    char* p = static_cast<char*>(data.data);
    for (int64_t done = 0, n = data.numel(); done < n;) {
      const int count = static_cast<int>(std::min<int64_t>(n - done, INT_MAX));
      ELECTRA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, p + done * dtype_size(data.dtype), count, type,
                                      MPI_SUM, comm_));
      done += count;
    }
    if (op != ReduceOp::kAverage) return;
    switch (data.dtype) {
      case DType::F32:
        return divide<float>(data.data, data.numel(), size());
      case DType::F64:
        return divide<double>(data.data, data.numel(), size());
      default:
        return divide<int32_t>(data.data, data.numel(), size());
    }
  }

  void wait(cudaStream_t) override {}

  void broadcast(const Tensor& data, int root, cudaStream_t) override {
    ELECTRA_CHECK(data.device == Device::CPU, "MPI communicator: a ", device_name(data.device),
                  " tensor");
    const MPI_Datatype type = mpi_type(data.dtype);
    char* p = static_cast<char*>(data.data);
    for (int64_t done = 0, n = data.numel(); done < n;) {
      const int count = static_cast<int>(std::min<int64_t>(n - done, INT_MAX));
      ELECTRA_MPI_CHECK(MPI_Bcast(p + done * dtype_size(data.dtype), count, type, root, comm_));
      done += count;
    }
  }

  void all_reduce_host(std::span<double> values, ReduceOp op) override {
    ELECTRA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                                    MPI_DOUBLE, MPI_SUM, comm_));
    if (op == ReduceOp::kAverage) divide<double>(values.data(), std::ssize(values), size());
  }

  void broadcast_host(std::span<uint64_t> values, int root) override {
    ELECTRA_MPI_CHECK(
        MPI_Bcast(values.data(), static_cast<int>(values.size()), MPI_UINT64_T, root, comm_));
  }

  void barrier() override { ELECTRA_MPI_CHECK(MPI_Barrier(comm_)); }

 protected:
  void abort_job(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

 private:
  MpiCommunicator(MPI_Comm comm, bool finalize, int rank, int size, int local_rank, int local_size)
      : Communicator(rank, size, local_rank, local_size), comm_(comm), finalize_(finalize) {}

  MPI_Comm comm_;
  bool finalize_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return MpiCommunicator::create();
}

}  // namespace electra
#endif
