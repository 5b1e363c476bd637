// The single-process communicator, launch detection and the backend choice (communicator.h).
// The MPI backend is communicator_mpi.cpp (in a build without MPI its factory below throws), NCCL
// communicator_nccl_cuda.cpp (communicator_nccl_missing.cpp in a build without NCCL).
#include "engine/communicator.h"

#include <cstdio>
#include <cstdlib>

namespace electra {
namespace {

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::atoi(value);
}

// With one rank, a sum and an average are the value itself: every collective is the identity.
class SingleCommunicator final : public Communicator {
 public:
  SingleCommunicator() : Communicator(0, 1, 0, 1) {}

  const char* backend() const override { return "single"; }
  void start_all_reduce(const Tensor&, ReduceOp, cudaStream_t) override {}
  void wait(cudaStream_t) override {}
  void broadcast(const Tensor&, int root, cudaStream_t) override {
    ELECTRA_CHECK(root == 0, "broadcast from rank ", root, " of a single process");
  }
  void all_reduce_host(std::span<double>, ReduceOp) override {}
  void broadcast_host(std::span<uint64_t>, int root) override {
    ELECTRA_CHECK(root == 0, "broadcast from rank ", root, " of a single process");
  }
  void barrier() override {}

 protected:
  void abort_job(int) override {}  // no other process to stop
};

}  // namespace

void Communicator::abort(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  abort_job(exit_code);
  std::_Exit(exit_code);
}

LaunchInfo detect_launch() {
  LaunchInfo info;
  const int size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 0));
  info.launcher = size > 0 || std::getenv("PMIX_RANK") != nullptr;
  info.world_size = size > 0 ? size : 1;
  return info;
}

std::unique_ptr<Communicator> make_single_communicator() {
  return std::make_unique<SingleCommunicator>();
}

std::unique_ptr<Communicator> make_process_communicator() {
  const LaunchInfo launch = detect_launch();
  if (ELECTRA_WITH_MPI && launch.launcher) return make_mpi_communicator();
  ELECTRA_USER_CHECK(launch.world_size == 1, "started as one of ", launch.world_size,
                     " ranks, but this electra was built without MPI (ELECTRA_MPI=OFF): ",
                     "install libopenmpi-dev and rebuild, or run one process");
  return make_single_communicator();
}

#if !ELECTRA_WITH_MPI
std::unique_ptr<Communicator> make_mpi_communicator() {
  throw Error("make_mpi_communicator: built without MPI (ELECTRA_MPI=OFF)");
}
#endif

}  // namespace electra
