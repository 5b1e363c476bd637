// Gradient check (f64, central differences) of the masked-position gather w.r.t. x, with
// repeated positions, at a small odd shape and at ELECTRA-Small's (T=128, H=256, K=19).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gather.h"
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

void check_gather(int64_t batch, int64_t len, int64_t h, int64_t slots, size_t max_checks) {
  Context ctx = Context::cpu();
  std::vector<int32_t> pos = test::random_ints(batch * slots, 51, 0, static_cast<int32_t>(len - 1));
  pos[slots - 1] = pos[0];  // a repeat in the first sequence
  std::vector<double> x = test::random_vector<double>(batch * len * h, 52);
  const std::vector<double> w = test::random_vector<double>(batch * slots * h, 53);
  std::vector<double> out(batch * slots * h);
  const Tensor pos_t = Tensor::view_of(pos.data(), Device::CPU, {batch, slots});
  long double base = 0;
  auto run = [&] {
    gather_forward(ctx, Tensor::view_of(x.data(), Device::CPU, {batch, len, h}), pos_t,
                   Tensor::view_of(out.data(), Device::CPU, {batch * slots, h}));
    return static_cast<double>(loss_of(out, w) - base);
  };
  run();
  base = loss_of(out, w);
  std::vector<double> dout = w, dx(batch * len * h, 0.0);
  gather_backward(ctx, Tensor::view_of(dout.data(), Device::CPU, {batch * slots, h}), pos_t,
                  Tensor::view_of(dx.data(), Device::CPU, {batch, len, h}));
  const test::GradcheckResult r = test::gradcheck(x, dx, run, 1e-5, max_checks);
  CHECK(r.checked > 0);
  CHECK(r.max_relative_error < 1e-6);
}

}  // namespace

TEST_CASE("gather gradient - small odd shape", "[gather][gradcheck]") {
  check_gather(3, 5, 7, 4, 0);
}

TEST_CASE("gather gradient - ELECTRA-Small shape", "[gather][gradcheck]") {
  check_gather(2, 128, 256, 19, 307);
}
