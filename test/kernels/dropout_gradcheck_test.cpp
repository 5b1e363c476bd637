// Gradient check (f64, central differences) of dropout w.r.t. x: the mask is a function of the
// stream and index only, so finite differences see the same mask as the backward.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/dropout.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

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

void check_dropout(int64_t n, float p, size_t max_checks) {
  Context ctx = Context::cpu(99);
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 1), dropout_site_offset(2), p};
  std::vector<double> x = test::random_vector<double>(n, 31);
  const std::vector<double> w = test::random_vector<double>(n, 32);
  std::vector<double> y(n), dx(n);
  long double base = 0;
  auto run = [&] {
    dropout_forward(ctx, Tensor::view_of(x.data(), Device::CPU, {n}),
                    Tensor::view_of(y.data(), Device::CPU, {n}), site);
    return static_cast<double>(loss_of(y, w) - base);
  };
  run();
  base = loss_of(y, w);
  std::vector<double> dy = w;
  dropout_backward(ctx, Tensor::view_of(dy.data(), Device::CPU, {n}),
                   Tensor::view_of(dx.data(), Device::CPU, {n}), site);
  const test::GradcheckResult r = test::gradcheck(x, dx, run, 1e-5, max_checks);
  CHECK(r.checked > 0);
  CHECK(r.max_relative_error < 1e-6);
}

}  // namespace

TEST_CASE("dropout gradient - small odd shape", "[dropout][gradcheck]") {
  check_dropout(105, 0.3f, 0);
}

TEST_CASE("dropout gradient - ELECTRA-Small activation (2 x 128 x 256)", "[dropout][gradcheck]") {
  check_dropout(2 * 128 * 256, 0.1f, 211);
}
