// launch_capture_gpu_test (label gpu): the check that every op case's parity run and
// launch_count_gpu_test make (test/common/launch_capture.h) tells a declaration that matches its
// captured graph from one that does not, on a made-up op that launches two kernels of this
// project: declared as 2 kernels it passes; as 1 or 3, or with a library call it does not make,
// it is reported, by op name and both counts. Every captured graph still runs (the counter its
// kernels add to reaches 2 a call).
#include <catch2/catch.hpp>

#include <vector>

#include "engine/arena.h"
#include "engine/context.h"
#include "engine/cuda_check.h"
#include "kernels/dispatch.h"
#include "test/common/device_util.h"
#include "test/common/launch_capture.h"

namespace electra::test {
namespace {

__global__ void add_one(int32_t* counter) {
  *counter += 1;
}

struct TwoKernels {
  static constexpr const char* kName = "two_kernels";
  Out counter;
  int64_t kernels_declared = 0, library_calls_declared = 0;

  Launches launches() const {
    return {.kernels = kernels_declared, .library_calls = library_calls_declared};
  }
  void check() const {}
  void cpu(Context&) const {}
  void cuda(Context& ctx) const {
    for (int i = 0; i < 2; ++i) {
      add_one<<<1, 1, 0, ctx.stream()>>>(counter.ptr<int32_t>());
      ELECTRA_CUDA_CHECK_LAUNCH();
    }
  }
};

TEST_CASE("LaunchCapture compares each op call's graph with what the op declares",
          "[launch_capture][gpu]") {
  Context ctx = Context::cuda(0);
  Arena arena("launch_capture", ctx.device(), 1 << 12);
  const Tensor counter = upload(ctx, arena, std::vector<int32_t>{0}, {1});
  LaunchCapture capture;
  {
    const ObserveOps observe(&capture);
    for (const auto& [kernels, library_calls] :
         {std::pair<int64_t, int64_t>{2, 0}, {1, 0}, {3, 0}, {2, 1}}) {
      run_op(ctx, TwoKernels{.counter = Out(counter),
                             .kernels_declared = kernels,
                             .library_calls_declared = library_calls});
    }
  }
  CHECK(download<int32_t>(ctx, counter) == std::vector<int32_t>{8});
  for (const std::string& m : capture.mismatches) UNSCOPED_INFO(m);
  REQUIRE(capture.mismatches.size() == 3);
  using Catch::Contains;
  CHECK_THAT(capture.mismatches[0], Contains("two_kernels") && Contains("declares 1 kernels") &&
                                        Contains("2 of ours, 0 other nodes"));
  CHECK_THAT(capture.mismatches[1], Contains("declares 3 kernels"));
  CHECK_THAT(capture.mismatches[2], Contains("and 1 library calls") && Contains("0 other nodes"));
  CHECK(capture.library_calls == 1);
  CHECK(capture.library_nodes == 0);
}

}  // namespace
}  // namespace electra::test
