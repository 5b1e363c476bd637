#include <catch2/catch.hpp>

#include "engine/context.h"

using namespace electra;

TEST_CASE("A CPU context has no CUDA resources and carries seed, rank and precision", "[context]") {
  Context ctx = Context::cpu(42, Precision::F64);
  CHECK(ctx.device() == Device::CPU);
  CHECK_FALSE(ctx.is_cuda());
  CHECK(ctx.stream() == nullptr);
  CHECK(ctx.cublaslt() == nullptr);
  CHECK(ctx.precision() == Precision::F64);
  ctx.set_rank(3);
  RngStream s = ctx.rng(RngPurpose::kDropout, 7);
  CHECK(s.seed == 42);
  CHECK(s.rank == 3);
  CHECK(s.step == 7);
  CHECK(s.purpose == RngPurpose::kDropout);
  CHECK_NOTHROW(ctx.synchronize());
}

TEST_CASE("Contexts move", "[context]") {
  Context a = Context::cpu(1);
  Context b = std::move(a);
  CHECK(b.seed() == 1);
}

TEST_CASE("A CUDA context is refused without a usable GPU, with the reason", "[context]") {
  if (cuda_device_count() > 0) {
    SUCCEED("GPU present: covered by arena_gpu_test");
  } else {
    CHECK_THROWS_AS(Context::cuda(0), Error);
    CHECK_FALSE(cuda_unavailable_reason().empty());
  }
}
