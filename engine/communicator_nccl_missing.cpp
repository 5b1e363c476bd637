// make_nccl_communicator() in a build without NCCL (ELECTRA_NCCL, CMakeLists.txt): the CUDA
// toolkit does not ship NCCL, and one GPU needs none, so such a build is complete for one GPU.
// A launch of several GPU ranks reaches this factory at its start (apps/cmd_pretrain.cpp) and
// stops there with one line saying how the two commands get NCCL.
#include "engine/communicator.h"
#include "engine/runtime_versions.h"

namespace electra {

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host, int,
                                                     double) {
  // A CPU-only build never opens a GPU: reaching this is a bug, not a missing library.
  if (!built_with_cuda()) {
    throw Error("make_nccl_communicator: built without CUDA (ELECTRA_CUDA=OFF)");
  }
  throw UserError(str_cat(
      "training on ", host == nullptr ? 0 : host->size(),
      " GPUs needs NCCL, and this electra was built without it: run scripts/setup.sh (it ",
      "installs NVIDIA's NCCL wheel) and then scripts/test.sh (which rebuilds with it), or ",
      "train on one GPU"));
}

std::string nccl_runtime_version() {
  return built_with_cuda() ? "not built (no NCCL at configure time: scripts/setup.sh installs it)"
                           : "not built (ELECTRA_CUDA=OFF)";
}

}  // namespace electra
