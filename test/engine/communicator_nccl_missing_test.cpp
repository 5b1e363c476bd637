// engine/communicator_nccl_missing.cpp, the NCCL factory of a build without NCCL, compiled into
// this test whatever the build has (its definitions come before the engine library's, whose
// NCCL communicator is then never linked in): a launch of several GPU ranks stops at its start
// with one line that says how the two commands get NCCL; a CPU-only build, which never opens a
// GPU, calls reaching it a bug.
#include <catch2/catch.hpp>
#include <string>

#include "engine/communicator.h"
#include "engine/runtime_versions.h"

using namespace electra;

namespace {

// The host communicator of rank 0 of 2 on one node; the factory only reads its size.
class TwoRanks final : public Communicator {
 public:
  TwoRanks() : Communicator(0, 2, 0, 2) {}
  const char* backend() const override { return "mpi"; }
  void start_all_reduce(const Tensor&, ReduceOp, cudaStream_t) override {}
  void wait(cudaStream_t) override {}
  void broadcast(const Tensor&, int, cudaStream_t) override {}
  void all_reduce_host(std::span<double>, ReduceOp) override {}
  void broadcast_host(std::span<uint64_t>, int) override {}
  void barrier() override {}

 protected:
  void abort_job(int) override {}
};

}  // namespace

TEST_CASE("without NCCL, several GPU ranks stop with one line saying how to get it", "[comm]") {
  if (!built_with_cuda()) {
    CHECK_THROWS_AS(make_nccl_communicator(std::make_unique<TwoRanks>(), 0, 60), Error);
    CHECK(nccl_runtime_version() == "not built (ELECTRA_CUDA=OFF)");
    return;
  }
  std::string message;
  try {
    make_nccl_communicator(std::make_unique<TwoRanks>(), 0, 60);
  } catch (const UserError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("training on 2 GPUs needs NCCL, and this electra was built without it") == 0);
  CHECK(message.find("scripts/setup.sh") != std::string::npos);
  CHECK(message.find("NCCL wheel") != std::string::npos);
  CHECK(message.find("scripts/test.sh") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(nccl_runtime_version().find("not built") == 0);
  CHECK(runtime_versions().nccl == nccl_runtime_version());
}
