// Communicator: the processes of a data-parallel run (docs/DISTRIBUTED.md): rank, size, the rank
// among the processes of this node, all-reduce, broadcast, barrier and abort. Three backends:
//
//   single  one process: every collective is the identity (any device);
//   mpi     the ranks started by mpirun, CPU tensors (MPI_COMM_WORLD duplicated, with
//           MPI_ERRORS_RETURN so that a failed call throws Error through ELECTRA_MPI_CHECK);
//   nccl    GPU tensors, one GPU per rank; wraps a host communicator (single or MPI) that
//           broadcasts NCCL's unique id and carries the host collectives. Optional: only a run
//           on several GPUs needs it.
//
// Contract:
//   - Tensor collectives work in place on contiguous f32, f64 or i32 tensors (NCCL also bf16) on
//     the backend's device (single: any; mpi: CPU; nccl: CUDA), and every rank calls them in the
//     same order with the same shapes.
//   - start_all_reduce() begins after the work already queued on `stream` (the caller's compute
//     stream; nullptr on the CPU) and does not make `stream` wait: CPU backends finish it before
//     returning, NCCL queues it on the communicator's own stream behind an event. The tensor must
//     not be written until wait(stream), which makes `stream` wait for every collective started
//     so far (NCCL also watches for asynchronous errors and for the timeout there).
//   - Host collectives block and are available on every backend (for metrics, flags, hashes).
//   - abort() ends every process of the job (MPI_Abort): a rank that fails calls it so that the
//     others never wait forever in a collective.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/device.h"

namespace electra {

enum class ReduceOp : uint8_t { kSum, kAverage };

// How this process was started, from the variables a launcher sets: OpenMPI's mpirun
// (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK with OMPI/PMI sizes) or a PMI launcher such as
// MPICH's mpiexec or srun (PMI_SIZE). world_size is 1 without a launcher.
struct LaunchInfo {
  bool launcher = false;
  int world_size = 1;
};
LaunchInfo detect_launch();

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // "single", "mpi" or "nccl".
  virtual const char* backend() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The rank among the processes of this node (MPI_COMM_TYPE_SHARED), and how many there are:
  // rank r uses GPU local_rank().
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  virtual void start_all_reduce(const Tensor& data, ReduceOp op, cudaStream_t stream) = 0;
  virtual void wait(cudaStream_t stream) = 0;
  void all_reduce(const Tensor& data, ReduceOp op, cudaStream_t stream) {
    start_all_reduce(data, op, stream);
    wait(stream);
  }
  // Copies root's `data` into every rank's; `stream` waits for it.
  virtual void broadcast(const Tensor& data, int root, cudaStream_t stream) = 0;

  virtual void all_reduce_host(std::span<double> values, ReduceOp op) = 0;
  virtual void broadcast_host(std::span<uint64_t> values, int root) = 0;
  virtual void barrier() = 0;
  // Flushes stdout and stderr, stops every process of the job and exits with `exit_code`.
  [[noreturn]] void abort(int exit_code);

 protected:
  Communicator(int rank, int size, int local_rank, int local_size)
      : rank_(rank), size_(size), local_rank_(local_rank), local_size_(local_size) {}
  // The backend's part of abort(): stop the other processes (may return).
  virtual void abort_job(int exit_code) = 0;

 private:
  int rank_, size_, local_rank_, local_size_;
};

// One process, no launcher needed.
std::unique_ptr<Communicator> make_single_communicator();

// MPI_COMM_WORLD (initialising MPI unless the program already did; finalised with the object
// then). Error in a build without MPI.
std::unique_ptr<Communicator> make_mpi_communicator();

// The communicator of this launch: MPI when a launcher started the process and the build has
// MPI, else single. A launch of several ranks in a build without MPI is a UserError (every rank
// would train alone).
std::unique_ptr<Communicator> make_process_communicator();

// NCCL over the ranks of `host` (which it keeps for the id broadcast and the host collectives)
// on CUDA device `cuda_device`. A collective that has not finished after `timeout_seconds`, or an
// asynchronous NCCL error (a peer died), aborts the NCCL communicator and throws Error from
// wait(). In a CUDA build without NCCL (ELECTRA_NCCL): UserError, one line saying how to get it;
// Error in a build without CUDA.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     int cuda_device, double timeout_seconds);

}  // namespace electra
