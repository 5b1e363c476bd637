// The single-process communicator and the launch detection (engine/communicator.h), without MPI:
// one rank, every collective the identity on host values and on tensors of any device, launcher
// variables read from the environment.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <vector>

#include "engine/communicator.h"

using namespace electra;

TEST_CASE("a single process is rank 0 of 1 and its collectives are the identity", "[comm]") {
  const std::unique_ptr<Communicator> comm = make_single_communicator();
  CHECK(std::string(comm->backend()) == "single");
  CHECK(comm->rank() == 0);
  CHECK(comm->size() == 1);
  CHECK(comm->local_rank() == 0);
  CHECK(comm->local_size() == 1);

  std::vector<float> values = {1.5f, -2.0f, 3.25f};
  const Tensor t = Tensor::view_of(values.data(), Device::CPU, {3});
  comm->all_reduce(t, ReduceOp::kSum, nullptr);
  comm->all_reduce(t, ReduceOp::kAverage, nullptr);
  comm->broadcast(t, 0, nullptr);
  CHECK(values == std::vector<float>{1.5f, -2.0f, 3.25f});
  // Any device: a CUDA tensor is not touched (this one points nowhere).
  Tensor cuda = t;
  cuda.device = Device::CUDA;
  cuda.data = nullptr;
  comm->start_all_reduce(cuda, ReduceOp::kSum, nullptr);
  comm->wait(nullptr);

  std::vector<double> host = {0.25, 7.0};
  comm->all_reduce_host(host, ReduceOp::kAverage);
  CHECK(host == std::vector<double>{0.25, 7.0});
  std::vector<uint64_t> words = {42, 7};
  comm->broadcast_host(words, 0);
  CHECK(words == std::vector<uint64_t>{42, 7});
  CHECK_THROWS_AS(comm->broadcast_host(words, 1), Error);
  comm->barrier();
}

TEST_CASE("the launch is read from the launcher's variables", "[comm]") {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) unsetenv(name);
  CHECK_FALSE(detect_launch().launcher);
  CHECK(detect_launch().world_size == 1);
  CHECK(std::string(make_process_communicator()->backend()) == "single");

  setenv("PMI_SIZE", "4", 1);
  CHECK(detect_launch().launcher);
  CHECK(detect_launch().world_size == 4);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);  // OpenMPI's own variable first
  CHECK(detect_launch().world_size == 8);
  if (!ELECTRA_WITH_MPI) {
    CHECK_THROWS_WITH(make_process_communicator(),
                      Catch::Contains("one of 8 ranks, but this electra was built without MPI"));
    CHECK_THROWS_AS(make_mpi_communicator(), Error);
  }
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMI_SIZE");
  setenv("PMIX_RANK", "0", 1);  // PMIx names no size: MPI will tell
  CHECK(detect_launch().launcher);
  CHECK(detect_launch().world_size == 1);
  unsetenv("PMIX_RANK");
  if (!ELECTRA_WITH_CUDA) {
    CHECK_THROWS_AS(make_nccl_communicator(make_single_communicator(), 0, 60), Error);
  }
}
