// Gradient checks (f64, central differences) of layernorm and residual_layernorm w.r.t. every
// input and parameter, at a small odd shape and at ELECTRA-Small's hidden size.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/layernorm.h"
#include "test/common/catch_checks.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_layernorm(int64_t n, int64_t h, size_t max_checks) {
  Context ctx = Context::cpu();
  std::vector<double> x = test::random_vector<double>(n * h, 1, -2, 2);
  std::vector<double> gamma = test::random_vector<double>(h, 2, 0.5, 1.5);
  std::vector<double> beta = test::random_vector<double>(h, 3);
  const std::vector<double> w = test::random_vector<double>(n * h, 4);
  std::vector<double> y(n * h), mean(n), rstd(n);
  const float eps = 1e-12f;
  long double base = 0;
  auto run = [&] {
    run_op(ctx, LayerNormForward{.x = test::view(x, {n, h}),
                                 .gamma = test::view(gamma, {h}),
                                 .beta = test::view(beta, {h}),
                                 .eps = eps,
                                 .y = Out(test::view(y, {n, h})),
                                 .mean = Out(test::view(mean, {n})),
                                 .rstd = Out(test::view(rstd, {n}))});
    return static_cast<double>(test::compensated_weighted_sum(y, w) - base);
  };
  run();
  base = test::compensated_weighted_sum(y, w);
  std::vector<double> dy = w, dx(n * h), dgamma(h, 0.0), dbeta(h, 0.0);
  run_op(ctx, LayerNormBackward{.dy = test::view(dy, {n, h}),
                                .x = test::view(x, {n, h}),
                                .gamma = test::view(gamma, {h}),
                                .mean = test::view(mean, {n}),
                                .rstd = test::view(rstd, {n}),
                                .dx = Out(test::view(dx, {n, h})),
                                .dgamma = Out(test::view(dgamma, {h})),
                                .dbeta = Out(test::view(dbeta, {h})),
                                .workspace = Out(Tensor{})});
  test::expect_gradient("x", x, dx, run, max_checks);
  test::expect_gradient("gamma", gamma, dgamma, run, max_checks);
  test::expect_gradient("beta", beta, dbeta, run, max_checks);
}

void check_residual_layernorm(int64_t n, int64_t h, float p, size_t max_checks) {
  Context ctx = Context::cpu(7);
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 3), dropout_site_offset(5), p};
  std::vector<double> x = test::random_vector<double>(n * h, 11, -2, 2);
  std::vector<double> residual = test::random_vector<double>(n * h, 12, -2, 2);
  std::vector<double> gamma = test::random_vector<double>(h, 13, 0.5, 1.5);
  std::vector<double> beta = test::random_vector<double>(h, 14);
  const std::vector<double> w = test::random_vector<double>(n * h, 15);
  std::vector<double> sum(n * h), y(n * h), mean(n), rstd(n);
  long double base = 0;
  auto run = [&] {
    run_op(ctx, ResidualLayerNormForward{.x = test::view(x, {n, h}),
                                         .residual = test::view(residual, {n, h}),
                                         .site = site,
                                         .gamma = test::view(gamma, {h}),
                                         .beta = test::view(beta, {h}),
                                         .eps = 1e-12f,
                                         .sum = Out(test::view(sum, {n, h})),
                                         .y = Out(test::view(y, {n, h})),
                                         .mean = Out(test::view(mean, {n})),
                                         .rstd = Out(test::view(rstd, {n}))});
    return static_cast<double>(test::compensated_weighted_sum(y, w) - base);
  };
  run();
  base = test::compensated_weighted_sum(y, w);
  std::vector<double> dy = w, dx(n * h), dresidual(n * h), dgamma(h, 0.0), dbeta(h, 0.0);
  run_op(ctx, ResidualLayerNormBackward{.dy = test::view(dy, {n, h}),
                                        .sum = test::view(sum, {n, h}),
                                        .gamma = test::view(gamma, {h}),
                                        .mean = test::view(mean, {n}),
                                        .rstd = test::view(rstd, {n}),
                                        .site = site,
                                        .dx = Out(test::view(dx, {n, h})),
                                        .dresidual = Out(test::view(dresidual, {n, h})),
                                        .dgamma = Out(test::view(dgamma, {h})),
                                        .dbeta = Out(test::view(dbeta, {h})),
                                        .workspace = Out(Tensor{})});
  test::expect_gradient("x", x, dx, run, max_checks);
  test::expect_gradient("residual", residual, dresidual, run, max_checks);
  test::expect_gradient("gamma", gamma, dgamma, run, max_checks);
  test::expect_gradient("beta", beta, dbeta, run, max_checks);
}

}  // namespace

TEST_CASE("layernorm gradients - small odd shape", "[layernorm][gradcheck]") {
  check_layernorm(15, 7, 0);
}

TEST_CASE("layernorm gradients - ELECTRA-Small shape N=256 H=256", "[layernorm][gradcheck]") {
  check_layernorm(256, 256, 97);
}

TEST_CASE("residual layernorm gradients through dropout - small odd shape",
          "[layernorm][gradcheck]") {
  check_residual_layernorm(15, 7, 0.3f, 0);
}

TEST_CASE("residual layernorm gradients through dropout - ELECTRA-Small shape",
          "[layernorm][gradcheck]") {
  check_residual_layernorm(256, 256, 0.1f, 97);
}
