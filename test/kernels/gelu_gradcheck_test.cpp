// Gradient checks (f64, central differences) of bias + GELU w.r.t. x and b (both backward
// entry points), at a small odd shape and at ELECTRA-Small's FFN shape.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gelu.h"
#include "test/common/catch_checks.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_bias_gelu(int64_t n, int64_t h, size_t max_checks) {
  Context ctx = Context::cpu();
  std::vector<double> x = test::random_vector<double>(n * h, 21, -3, 3);
  std::vector<double> b = test::random_vector<double>(h, 22);
  const std::vector<double> w = test::random_vector<double>(n * h, 23);
  std::vector<double> y(n * h);
  long double base = 0;
  auto run = [&] {
    run_op(ctx, BiasGeluForward{.x = test::view(x, {n, h}),
                                .b = test::view(b, {h}),
                                .y = Out(test::view(y, {n, h}))});
    return static_cast<double>(test::compensated_weighted_sum(y, w) - base);
  };
  run();
  base = test::compensated_weighted_sum(y, w);
  std::vector<double> dy = w, dx(n * h), db(h, 0.0);
  run_op(ctx, BiasGeluBackward{.dy = test::view(dy, {n, h}),
                               .x = test::view(x, {n, h}),
                               .b = test::view(b, {h}),
                               .dx = Out(test::view(dx, {n, h})),
                               .db = Out(test::view(db, {h})),
                               .workspace = Out(Tensor{})});
  test::expect_gradient("x", x, dx, run, max_checks);
  test::expect_gradient("b", b, db, run, max_checks);

  // The pre-activation entry point gives the same dx and db from u = x + b.
  std::vector<double> u(n * h), dx_u(n * h), db_u(h, 0.0);
  for (int64_t i = 0; i < n * h; ++i) u[i] = x[i] + b[i % h];
  run_op(ctx, BiasGeluBackwardPreact{.dy = test::view(dy, {n, h}),
                                     .u = test::view(u, {n, h}),
                                     .dx = Out(test::view(dx_u, {n, h})),
                                     .db = Out(test::view(db_u, {h})),
                                     .workspace = Out(Tensor{})});
  CHECK(test::max_relative_error(dx_u, dx) < 1e-12);
  CHECK(test::max_relative_error(db_u, db) < 1e-12);
}

}  // namespace

TEST_CASE("bias + GELU gradients - small odd shape", "[gelu][gradcheck]") {
  check_bias_gelu(15, 7, 0);
}

TEST_CASE("bias + GELU gradients - ELECTRA-Small FFN shape N=128 H=1024", "[gelu][gradcheck]") {
  check_bias_gelu(128, 1024, 97);
}
