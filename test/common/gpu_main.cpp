// main() of every GPU test executable: with no usable GPU it prints one line saying why and exits
// 77, which ctest reports as skipped (SKIP_RETURN_CODE 77), unless the machine has an NVIDIA
// device (gpu_presence.h): then the CUDA error is a failure (exit 1). It never passes silently.
// At the end it prints the largest error any `error < bound` assertion measured, as a share of its
// bound (largest_error.h), for scripts/gpu_check.sh's summary.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "engine/device.h"
#include "test/common/gpu_presence.h"
#include "test/common/largest_error.h"

namespace {

struct Largest {
  electra::test::MeasuredError error;
  std::string where;
  int compared = 0;
};
Largest largest;

// Sees every assertion (a listener receives passing ones too) and keeps the largest share.
struct LargestErrorListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override { test_case_ = info.name; }
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    const Catch::AssertionResult& result = stats.assertionResult;
    if (!result.hasExpression()) return true;
    const auto measured = electra::test::parse_error_bound(result.getExpandedExpression());
    if (!measured) return true;
    ++largest.compared;
    if (largest.compared == 1 || measured->share() > largest.error.share()) {
      largest.error = *measured;
      largest.where = test_case_ + " at " + result.getSourceInfo().file + ":" +
                      std::to_string(result.getSourceInfo().line);
    }
    return true;
  }

 private:
  std::string test_case_;
};

}  // namespace

CATCH_REGISTER_LISTENER(LargestErrorListener)

int main(int argc, char** argv) {
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
  const int failed = Catch::Session().run(argc, argv);
  if (largest.compared > 0) {
    std::printf(
        "largest error: %.4g against a bound of %.4g (%.3f of the bound; %d compared) in %s\n",
        largest.error.error, largest.error.bound, largest.error.share(), largest.compared,
        largest.where.c_str());
  }
  return failed;
}
