// gather of masked positions on the CPU: rows picked, repeated positions accumulated in the
// backward (+=, or from 0 over every row with accumulate = false), out-of-range positions refused
// (bad shapes: gather_contract_test).
#include <catch2/catch.hpp>

#include "kernels/gather.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("gather picks the rows of the positions and its backward scatter-adds", "[gather]") {
  Context ctx = Context::cpu();
  const int64_t batch = 2, len = 4, h = 3, slots = 3;
  std::vector<float> x = test::random_vector<float>(batch * len * h, 1);
  std::vector<int32_t> pos = {2, 0, 0, 3, 1, 3};  // sequence 0 repeats 0, sequence 1 repeats 3
  const Tensor pos_t = Tensor::view_of(pos.data(), Device::CPU, {batch, slots});
  std::vector<float> out(batch * slots * h, -1.0f);
  run_op(ctx,
         GatherForward{.x = Tensor::view_of(x.data(), Device::CPU, {batch, len, h}),
                       .positions = pos_t,
                       .out = Out(Tensor::view_of(out.data(), Device::CPU, {batch * slots, h}))});
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < slots; ++k) {
      for (int64_t j = 0; j < h; ++j) {
        REQUIRE(out[(b * slots + k) * h + j] == x[(b * len + pos[b * slots + k]) * h + j]);
      }
    }
  }
  std::vector<float> dout = test::random_vector<float>(batch * slots * h, 2);
  std::vector<float> dx(batch * len * h, 1.0f);
  run_op(ctx, GatherBackward{.dout = Tensor::view_of(dout.data(), Device::CPU, {batch * slots, h}),
                             .positions = pos_t,
                             .dx = Out(Tensor::view_of(dx.data(), Device::CPU, {batch, len, h}))});
  for (int64_t j = 0; j < h; ++j) {
    CHECK(dx[(0 * len + 2) * h + j] == 1.0f + dout[0 * h + j]);
    CHECK(dx[(0 * len + 0) * h + j] == (1.0f + dout[1 * h + j]) + dout[2 * h + j]);
    CHECK(dx[(0 * len + 1) * h + j] == 1.0f);
    CHECK(dx[(1 * len + 3) * h + j] == (1.0f + dout[3 * h + j]) + dout[5 * h + j]);
    CHECK(dx[(1 * len + 1) * h + j] == 1.0f + dout[4 * h + j]);
    CHECK(dx[(1 * len + 0) * h + j] == 1.0f);
  }
  // accumulate = false: the same sums from 0, and 0 where no slot points.
  run_op(ctx, GatherBackward{.dout = Tensor::view_of(dout.data(), Device::CPU, {batch * slots, h}),
                             .positions = pos_t,
                             .dx = Out(Tensor::view_of(dx.data(), Device::CPU, {batch, len, h})),
                             .accumulate = false});
  for (int64_t j = 0; j < h; ++j) {
    CHECK(dx[(0 * len + 2) * h + j] == dout[0 * h + j]);
    CHECK(dx[(0 * len + 0) * h + j] == dout[1 * h + j] + dout[2 * h + j]);
    CHECK(dx[(0 * len + 1) * h + j] == 0.0f);
    CHECK(dx[(0 * len + 3) * h + j] == 0.0f);
    CHECK(dx[(1 * len + 3) * h + j] == dout[3 * h + j] + dout[5 * h + j]);
    CHECK(dx[(1 * len + 0) * h + j] == 0.0f);
  }
}

TEST_CASE("gather refuses out-of-range positions naming the slot", "[gather]") {
  Context ctx = Context::cpu();
  std::vector<float> x(2 * 4 * 3, 0.5f), out(2 * 2 * 3);
  std::vector<int32_t> pos = {0, 1, 2, 4};
  const Tensor xt = Tensor::view_of(x.data(), Device::CPU, {2, 4, 3});
  CHECK_THROWS_WITH(
      run_op(ctx, GatherForward{.x = xt,
                                .positions = Tensor::view_of(pos.data(), Device::CPU, {2, 2}),
                                .out = Out(Tensor::view_of(out.data(), Device::CPU, {4, 3}))}),
      Catch::Contains("position 4 at (batch 1, slot 1)"));
  pos[3] = -1;
  CHECK_THROWS_AS(
      run_op(ctx, GatherBackward{.dout = Tensor::view_of(out.data(), Device::CPU, {4, 3}),
                                 .positions = Tensor::view_of(pos.data(), Device::CPU, {2, 2}),
                                 .dx = Out(xt)}),
      UserError);
}
