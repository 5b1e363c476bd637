#include <cstdio>

#include "apps/command.h"
#include "apps/runtime_report.h"
#include "engine/device.h"
#include "engine/error.h"

namespace electra::apps {

int cmd_version(const std::vector<std::string>& args) {
  ELECTRA_USER_CHECK(args.empty(), "version takes no arguments (got '", args.front(), "')");
  std::printf("electra %s\n", ELECTRA_VERSION);
  if (built_with_cuda()) {
    std::printf("cuda: built for architectures %s\n", ELECTRA_CUDA_ARCHITECTURES);
  } else {
    std::printf("cuda: not built (ELECTRA_CUDA=OFF)\n");
  }
  std::printf("mpi: %s\n", ELECTRA_WITH_MPI ? "built" : "not built");
  print_runtime_report(stdout, "");
  return 0;
}

}  // namespace electra::apps
