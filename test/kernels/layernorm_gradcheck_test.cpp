// Gradient checks (f64, central differences) of layernorm and residual_layernorm w.r.t. every
// input and parameter, at a small odd shape and at ELECTRA-Small's hidden size.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/layernorm.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

Tensor view(std::vector<double>& v, std::initializer_list<int64_t> dims) {
  return Tensor::view_of(v.data(), Device::CPU, dims);
}

// sum_i w_i y_i, Neumaier-compensated in long double. Callers subtract the unperturbed loss before
// rounding to double: |loss| ~ 5e2 would otherwise leave ~1e-13 of rounding in each evaluation,
// 5e-9 after dividing by the 2e-5 step, against a tolerance of 1e-6 relative.
long double loss_of(const std::vector<double>& y, const std::vector<double>& w) {
  long double sum = 0, carry = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const long double term = static_cast<long double>(y[i]) * w[i];
    const long double next = sum + term;
    carry += std::fabs(sum) >= std::fabs(term) ? (sum - next) + term : (term - next) + sum;
    sum = next;
  }
  return sum + carry;
}

void expect_gradient(const char* name, std::vector<double>& input,
                     const std::vector<double>& analytic, const std::function<double()>& loss,
                     size_t max_checks) {
  INFO("gradient w.r.t. " << name);
  const test::GradcheckResult r = test::gradcheck(input, analytic, loss, 1e-5, max_checks);
  CHECK(r.checked > 0);
  CHECK(r.max_relative_error < 1e-6);
}

void check_layernorm(int64_t n, int64_t h, size_t max_checks) {
  Context ctx = Context::cpu();
  std::vector<double> x = test::random_vector<double>(n * h, 1, -2, 2);
  std::vector<double> gamma = test::random_vector<double>(h, 2, 0.5, 1.5);
  std::vector<double> beta = test::random_vector<double>(h, 3);
  const std::vector<double> w = test::random_vector<double>(n * h, 4);
  std::vector<double> y(n * h), mean(n), rstd(n);
  const double eps = 1e-12;
  long double base = 0;
  auto run = [&] {
    layernorm_forward(ctx, view(x, {n, h}), view(gamma, {h}), view(beta, {h}), eps, view(y, {n, h}),
                      view(mean, {n}), view(rstd, {n}));
    return static_cast<double>(loss_of(y, w) - base);
  };
  run();
  base = loss_of(y, w);
  std::vector<double> dy = w, dx(n * h), dgamma(h, 0.0), dbeta(h, 0.0);
  layernorm_backward(ctx, view(dy, {n, h}), view(x, {n, h}), view(gamma, {h}), view(mean, {n}),
                     view(rstd, {n}), view(dx, {n, h}), view(dgamma, {h}), view(dbeta, {h}),
                     Tensor{});
  expect_gradient("x", x, dx, run, max_checks);
  expect_gradient("gamma", gamma, dgamma, run, max_checks);
  expect_gradient("beta", beta, dbeta, run, max_checks);
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
    residual_layernorm_forward(ctx, view(x, {n, h}), view(residual, {n, h}), site, view(gamma, {h}),
                               view(beta, {h}), 1e-12f, view(sum, {n, h}), view(y, {n, h}),
                               view(mean, {n}), view(rstd, {n}));
    return static_cast<double>(loss_of(y, w) - base);
  };
  run();
  base = loss_of(y, w);
  std::vector<double> dy = w, dx(n * h), dresidual(n * h), dgamma(h, 0.0), dbeta(h, 0.0);
  residual_layernorm_backward(ctx, view(dy, {n, h}), view(sum, {n, h}), view(gamma, {h}),
                              view(mean, {n}), view(rstd, {n}), site, view(dx, {n, h}),
                              view(dresidual, {n, h}), view(dgamma, {h}), view(dbeta, {h}),
                              Tensor{});
  expect_gradient("x", x, dx, run, max_checks);
  expect_gradient("residual", residual, dresidual, run, max_checks);
  expect_gradient("gamma", gamma, dgamma, run, max_checks);
  expect_gradient("beta", beta, dbeta, run, max_checks);
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
