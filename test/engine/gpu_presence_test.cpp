#include <catch2/catch.hpp>

#include "test/common/gpu_presence.h"

using namespace electra::test;

TEST_CASE("A GPU test without a usable GPU skips only where no NVIDIA device is expected",
          "[gpu_presence]") {
  CHECK(no_gpu_verdict(true, false, nullptr) == NoGpuVerdict::kSkip);
  CHECK(no_gpu_verdict(true, false, "0") == NoGpuVerdict::kSkip);
  CHECK(no_gpu_verdict(true, true, nullptr) == NoGpuVerdict::kFail);
  CHECK(no_gpu_verdict(true, false, "1") == NoGpuVerdict::kFail);
  // A CPU-only build has no kernels to test: it skips even on a GPU machine.
  CHECK(no_gpu_verdict(false, true, "1") == NoGpuVerdict::kSkip);
}
