// Gradient checks (f64, central differences) of bias + GELU w.r.t. x and b (both backward
// entry points), at a small odd shape and at ELECTRA-Small's FFN shape.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gelu.h"
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

void check_bias_gelu(int64_t n, int64_t h, size_t max_checks) {
  Context ctx = Context::cpu();
  std::vector<double> x = test::random_vector<double>(n * h, 21, -3, 3);
  std::vector<double> b = test::random_vector<double>(h, 22);
  const std::vector<double> w = test::random_vector<double>(n * h, 23);
  std::vector<double> y(n * h);
  long double base = 0;
  auto run = [&] {
    bias_gelu_forward(ctx, view(x, {n, h}), view(b, {h}), view(y, {n, h}));
    return static_cast<double>(loss_of(y, w) - base);
  };
  run();
  base = loss_of(y, w);
  std::vector<double> dy = w, dx(n * h), db(h, 0.0);
  bias_gelu_backward(ctx, view(dy, {n, h}), view(x, {n, h}), view(b, {h}), view(dx, {n, h}),
                     view(db, {h}), Tensor{});
  expect_gradient("x", x, dx, run, max_checks);
  expect_gradient("b", b, db, run, max_checks);

  // The pre-activation entry point gives the same dx and db from u = x + b.
  std::vector<double> u(n * h), dx_u(n * h), db_u(h, 0.0);
  for (int64_t i = 0; i < n * h; ++i) u[i] = x[i] + b[i % h];
  bias_gelu_backward_preact(ctx, view(dy, {n, h}), view(u, {n, h}), view(dx_u, {n, h}),
                            view(db_u, {h}), Tensor{});
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
