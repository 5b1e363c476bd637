// gather on the GPU with out-of-range positions: NaN rows in the forward, skipped by the backward
// (a check the op harness cannot express; parity with the CPU: gather_cases.cpp).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gather.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Named as the harness's GPU tests are: <op>/<what>/<dtype>.
TEST_CASE("gather/bad_positions_give_nan_rows_and_are_skipped/f32", "[gather][gpu]") {
  Context gpu = Context::cuda(0);
  Arena arena("gather", Device::CUDA, 1 << 20);
  std::vector<int32_t> pos = {1, 9, -1, 2};
  std::vector<float> x = test::random_vector<float>(4 * 8, 4);
  const Tensor gpos = test::upload(gpu, arena, pos, {1, 4});
  const Tensor gx = test::upload(gpu, arena, x, {1, 4, 8});
  const Tensor gout = arena.alloc<float>({4, 8});
  run_op(gpu, GatherForward{.x = gx, .positions = gpos, .out = Out(gout)});
  const std::vector<float> out = test::download<float>(gpu, gout);
  for (int j = 0; j < 8; ++j) {
    CHECK(out[j] == x[8 + j]);
    CHECK(std::isnan(out[8 + j]));
    CHECK(std::isnan(out[16 + j]));
    CHECK(out[24 + j] == x[16 + j]);
  }
  const Tensor gdx = test::upload(gpu, arena, x, {1, 4, 8});
  run_op(gpu,
         GatherBackward{
             .dout = gout, .positions = gpos, .dx = Out(gdx)});  // NaN rows belong to skipped slots
  const std::vector<float> dx = test::download<float>(gpu, gdx);
  for (int j = 0; j < 8; ++j) {
    CHECK(dx[j] == x[j]);
    CHECK(dx[8 + j] == 2 * x[8 + j]);
    CHECK(dx[16 + j] == 2 * x[16 + j]);
    CHECK(dx[24 + j] == x[24 + j]);
  }
}
