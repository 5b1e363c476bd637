// main() of every GPU test executable: with no usable GPU it prints one line saying why and exits
// 77, which ctest reports as skipped (SKIP_RETURN_CODE 77). It never passes silently.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "engine/device.h"

int main(int argc, char** argv) {
  if (electra::cuda_device_count() == 0) {
    std::printf("skipped: %s\n", electra::cuda_unavailable_reason().c_str());
    return 77;
  }
  std::printf("running on %s\n", electra::cuda_device_description(0).c_str());
  return Catch::Session().run(argc, argv);
}
