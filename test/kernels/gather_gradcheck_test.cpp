// Gradient check (f64, central differences) of the masked-position gather w.r.t. x, with
// repeated positions, at a small odd shape and at ELECTRA-Small's (T=128, H=256, K=19).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gather.h"
#include "test/common/catch_checks.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_gather(int64_t batch, int64_t len, int64_t h, int64_t slots, size_t max_checks) {
  Context ctx = Context::cpu();
  std::vector<int32_t> pos = test::random_ints(batch * slots, 51, 0, static_cast<int32_t>(len - 1));
  pos[slots - 1] = pos[0];  // a repeat in the first sequence
  std::vector<double> x = test::random_vector<double>(batch * len * h, 52);
  const std::vector<double> w = test::random_vector<double>(batch * slots * h, 53);
  std::vector<double> out(batch * slots * h);
  const Tensor pos_t = test::view(pos, {batch, slots});
  long double base = 0;
  auto run = [&] {
    run_op(ctx, GatherForward{.x = test::view(x, {batch, len, h}),
                              .positions = pos_t,
                              .out = Out(test::view(out, {batch * slots, h}))});
    return static_cast<double>(test::compensated_weighted_sum(out, w) - base);
  };
  run();
  base = test::compensated_weighted_sum(out, w);
  std::vector<double> dout = w, dx(batch * len * h, 0.0);
  run_op(ctx, GatherBackward{.dout = test::view(dout, {batch * slots, h}),
                             .positions = pos_t,
                             .dx = Out(test::view(dx, {batch, len, h}))});
  test::expect_gradient("x", x, dx, run, max_checks);
}

}  // namespace

TEST_CASE("gather gradient - small odd shape", "[gather][gradcheck]") {
  check_gather(3, 5, 7, 4, 0);
}

TEST_CASE("gather gradient - ELECTRA-Small shape", "[gather][gradcheck]") {
  check_gather(2, 128, 256, 19, 307);
}
