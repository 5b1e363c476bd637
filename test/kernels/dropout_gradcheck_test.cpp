// Gradient check (f64, central differences) of dropout w.r.t. x: the mask is a function of the
// stream and index only, so finite differences see the same mask as the backward.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/dropout.h"
#include "test/common/catch_checks.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_dropout(int64_t n, float p, size_t max_checks) {
  Context ctx = Context::cpu(99);
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 1), dropout_site_offset(2), p};
  std::vector<double> x = test::random_vector<double>(n, 31);
  const std::vector<double> w = test::random_vector<double>(n, 32);
  std::vector<double> y(n), dx(n);
  long double base = 0;
  auto run = [&] {
    run_op(ctx, Dropout{.x = test::view(x), .site = site, .y = Out(test::view(y))});
    return static_cast<double>(test::compensated_weighted_sum(y, w) - base);
  };
  run();
  base = test::compensated_weighted_sum(y, w);
  std::vector<double> dy = w;
  run_op(ctx, Dropout{.x = test::view(dy), .site = site, .y = Out(test::view(dx))});
  test::expect_gradient("x", x, dx, run, max_checks);
}

}  // namespace

TEST_CASE("dropout gradient - small odd shape", "[dropout][gradcheck]") {
  check_dropout(105, 0.3f, 0);
}

TEST_CASE("dropout gradient - ELECTRA-Small activation (2 x 128 x 256)", "[dropout][gradcheck]") {
  check_dropout(2 * 128 * 256, 0.1f, 211);
}
