// main() of every GPU test executable: with no usable GPU it prints one line saying why and exits
// 77, which ctest reports as skipped (SKIP_RETURN_CODE 77), unless the machine has an NVIDIA
// device (gpu_presence.h): then the CUDA error is a failure (exit 1). It never passes silently.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/device.h"
#include "test/common/gpu_presence.h"

int main(int argc, char** argv) {
  // Listing the test cases (catch_discover_tests does at build time) needs no GPU.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).starts_with("--list")) return Catch::Session().run(argc, argv);
  }
  if (electra::cuda_device_count() == 0) {
    const std::string reason = electra::cuda_unavailable_reason();
    const bool node = std::filesystem::exists("/dev/nvidia0");
    if (electra::test::no_gpu_verdict(electra::built_with_cuda(), node,
                                      std::getenv("ELECTRA_EXPECT_GPU")) ==
        electra::test::NoGpuVerdict::kFail) {
      std::printf("FAILED: this machine has an NVIDIA device (%s) but CUDA cannot use it: %s\n",
                  node ? "/dev/nvidia0 exists" : "ELECTRA_EXPECT_GPU=1", reason.c_str());
      return 1;
    }
    std::printf("skipped: %s\n", reason.c_str());
    return 77;
  }
  std::printf("running on %s\n", electra::cuda_device_description(0).c_str());
  return Catch::Session().run(argc, argv);
}
