#include <catch2/catch.hpp>
#include <vector>

#include "engine/arena.h"
#include "engine/context.h"

using namespace electra;

TEST_CASE("A CUDA arena allocates device memory that round-trips through copy_tensor", "[gpu]") {
  Context ctx = Context::cuda(0);
  CHECK(ctx.stream() != nullptr);
  CHECK(ctx.cublaslt() != nullptr);
  Arena arena("device", Device::CUDA, 1 << 20);
  Tensor d = arena.alloc<float>({1000});
  CHECK(d.device == Device::CUDA);
  std::vector<float> in(1000), out(1000, 0.0f);
  for (int i = 0; i < 1000; ++i) in[i] = 0.5f * i - 7;
  const Tensor h_in = Tensor::view_of(in.data(), Device::CPU, {1000});
  const Tensor h_out = Tensor::view_of(out.data(), Device::CPU, {1000});
  poison_tensor(ctx.stream(), d);
  copy_tensor(ctx.stream(), d, h_in);
  copy_tensor(ctx.stream(), h_out, d);
  CHECK(out == in);
  CHECK_THROWS_WITH(arena.alloc<float>({1 << 20}), Catch::Contains("arena 'device' (cuda)"));
}
