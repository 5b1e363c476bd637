// bias + GELU on the CPU: the forward against the erf formula and known values, f32 against f64,
// the left tail (the gradients and db's +=: gelu_gradcheck_test; wrong shapes and dtypes:
// gelu_contract_test).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gelu.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// y = gelu(x + b) and its backward: dx, db += (x [n, h], b [h]).
template <class T>
void forward_backward(Context& ctx, std::vector<T>& x, std::vector<T>& b, int64_t n, int64_t h,
                      std::vector<T>& y, std::vector<T>& dy, std::vector<T>& dx,
                      std::vector<T>& db) {
  const Tensor xt = test::view(x, {n, h}), bt = test::view(b, {h});
  run_op(ctx, BiasGeluForward{.x = xt, .b = bt, .y = Out(test::view(y, {n, h}))});
  run_op(ctx, BiasGeluBackward{.dy = test::view(dy, {n, h}),
                               .x = xt,
                               .b = bt,
                               .dx = Out(test::view(dx, {n, h})),
                               .db = Out(test::view(db, {h})),
                               .workspace = Out(Tensor{})});
}

}  // namespace

TEST_CASE("bias + GELU forward equals 0.5 u (1 + erf(u / sqrt 2)) with u = x + b", "[gelu]") {
  Context ctx = Context::cpu();
  const int64_t n = 5, h = 3;
  std::vector<double> x = test::random_vector<double>(n * h, 1, -4, 4);
  std::vector<double> b = {0.5, -0.25, 1.0};
  x[0] = -0.5;  // u = 0: gelu(0) = 0
  x[1] = 1.25;  // u = 1: Phi(1) = 0.8413447460685429
  x[2] = -2.0;  // u = -1: -(1 - Phi(1))
  std::vector<double> y(n * h);
  run_op(ctx, BiasGeluForward{.x = Tensor::view_of(x.data(), Device::CPU, {n, h}),
                              .b = Tensor::view_of(b.data(), Device::CPU, {h}),
                              .y = Out(Tensor::view_of(y.data(), Device::CPU, {n, h}))});
  CHECK(y[0] == 0.0);
  CHECK(y[1] == Approx(0.8413447460685429).epsilon(1e-12));
  CHECK(y[2] == Approx(-0.15865525393145707).epsilon(1e-12));
  for (int64_t i = 0; i < n * h; ++i) {
    const double u = x[i] + b[i % h];
    REQUIRE(y[i] == Approx(0.5 * u * std::erfc(-u / std::sqrt(2.0))).epsilon(1e-9));
  }
}

TEST_CASE("bias + GELU in f32 matches f64", "[gelu]") {
  Context ctx = Context::cpu();
  const int64_t n = 9, h = 13;
  std::vector<double> x = test::random_vector<double>(n * h, 2, -3, 3);
  std::vector<double> b = test::random_vector<double>(h, 3);
  std::vector<double> dy = test::random_vector<double>(n * h, 4);
  std::vector<float> xf(x.begin(), x.end()), bf(b.begin(), b.end()), dyf(dy.begin(), dy.end());
  std::vector<double> y(n * h), dx(n * h), db(h, 1.0);
  std::vector<float> yf(n * h), dxf(n * h), dbf(h, 1.0f);
  forward_backward(ctx, x, b, n, h, y, dy, dx, db);
  forward_backward(ctx, xf, bf, n, h, yf, dyf, dxf, dbf);
  CHECK(test::max_relative_error(yf, y) < 1e-5);
  CHECK(test::max_relative_error(dxf, dx) < 1e-5);
  CHECK(test::max_relative_error(dbf, db) < 1e-5);
}

TEST_CASE("the vectorized f32 GELU keeps its relative accuracy in the left tail", "[gelu]") {
  // Every f32 element against the f64 formula, per element, over u in [-9, 9] (GELU(-9) ~ -1e-18):
  // 1 + erf(u / sqrt 2) would lose all accuracy below u ~ -5. Rounding u / sqrt 2 to f32 alone
  // moves erfc by ~u^2 x 6e-8 relative (its condition number is ~u^2), hence the bound.
  Context ctx = Context::cpu();
  const int64_t n = 3, h = 601;  // not a multiple of the 64-element chunks
  std::vector<float> x(n * h), b(h, 0.0f), y(n * h), dy(n * h, 1.0f), dx(n * h), db(h, 0.0f);
  for (int64_t i = 0; i < n * h; ++i) x[i] = -9.0f + 18.0f * static_cast<float>(i) / (n * h - 1);
  forward_backward(ctx, x, b, n, h, y, dy, dx, db);
  for (int64_t i = 0; i < n * h; ++i) {
    const double u = x[i];
    const double cdf = 0.5 * std::erfc(-u / std::sqrt(2.0));
    const double grad = cdf + u * std::exp(-0.5 * u * u) / std::sqrt(2.0 * M_PI);
    INFO("u = " << u);
    const double bound = 1e-6 + 2e-7 * u * u;
    REQUIRE(std::abs(y[i] - u * cdf) <= bound * std::abs(u * cdf));
    REQUIRE(std::abs(dx[i] - grad) <= bound * std::abs(grad) + 1e-7);
  }
}
