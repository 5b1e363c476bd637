// bias + GELU on the CPU: the forward against the erf formula and known values, f32 against f64,
// the += of db, the left tail (wrong shapes and dtypes: gelu_contract_test).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/gelu.h"
#include "test/common/test_util.h"

using namespace electra;

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

TEST_CASE("bias + GELU in f32 matches f64 and db accumulates", "[gelu]") {
  Context ctx = Context::cpu();
  const int64_t n = 9, h = 13;
  std::vector<double> x = test::random_vector<double>(n * h, 2, -3, 3);
  std::vector<double> b = test::random_vector<double>(h, 3);
  std::vector<double> dy = test::random_vector<double>(n * h, 4);
  std::vector<float> xf(x.begin(), x.end()), bf(b.begin(), b.end()), dyf(dy.begin(), dy.end());
  std::vector<double> y(n * h), dx(n * h), db(h, 1.0);
  std::vector<float> yf(n * h), dxf(n * h), dbf(h, 1.0f);
  auto run = [&](auto& xs, auto& bs, auto& ys, auto& dys, auto& dxs, auto& dbs) {
    const Tensor xt = Tensor::view_of(xs.data(), Device::CPU, {n, h});
    const Tensor bt = Tensor::view_of(bs.data(), Device::CPU, {h});
    run_op(ctx, BiasGeluForward{
                    .x = xt, .b = bt, .y = Out(Tensor::view_of(ys.data(), Device::CPU, {n, h}))});
    run_op(ctx, BiasGeluBackward{.dy = Tensor::view_of(dys.data(), Device::CPU, {n, h}),
                                 .x = xt,
                                 .b = bt,
                                 .dx = Out(Tensor::view_of(dxs.data(), Device::CPU, {n, h})),
                                 .db = Out(Tensor::view_of(dbs.data(), Device::CPU, {h})),
                                 .workspace = Out(Tensor{})});
  };
  run(x, b, y, dy, dx, db);
  run(xf, bf, yf, dyf, dxf, dbf);
  CHECK(test::max_relative_error(yf, y) < 1e-5);
  CHECK(test::max_relative_error(dxf, dx) < 1e-5);
  CHECK(test::max_relative_error(dbf, db) < 1e-5);
  // db started at 1: it holds 1 + sum over rows of dx.
  for (int64_t j = 0; j < h; ++j) {
    double sum = 1.0;
    for (int64_t r = 0; r < n; ++r) sum += dx[r * h + j];
    REQUIRE(db[j] == Approx(sum).epsilon(1e-13));
  }
}

TEST_CASE("the vectorized f32 GELU keeps its relative accuracy in the left tail", "[gelu]") {
  // Every f32 element against the f64 formula, per element, over u in [-9, 9] (GELU(-9) ~ -1e-18):
  // 1 + erf(u / sqrt 2) would lose all accuracy below u ~ -5. Rounding u / sqrt 2 to f32 alone
  // moves erfc by ~u^2 x 6e-8 relative (its condition number is ~u^2), hence the bound.
  Context ctx = Context::cpu();
  const int64_t n = 3, h = 601;  // not a multiple of the 64-element chunks
  std::vector<float> x(n * h), b(h, 0.0f), y(n * h), dy(n * h, 1.0f), dx(n * h), db(h, 0.0f);
  for (int64_t i = 0; i < n * h; ++i) x[i] = -9.0f + 18.0f * static_cast<float>(i) / (n * h - 1);
  const Tensor xt = Tensor::view_of(x.data(), Device::CPU, {n, h});
  const Tensor bt = Tensor::view_of(b.data(), Device::CPU, {h});
  run_op(ctx, BiasGeluForward{
                  .x = xt, .b = bt, .y = Out(Tensor::view_of(y.data(), Device::CPU, {n, h}))});
  run_op(ctx, BiasGeluBackward{.dy = Tensor::view_of(dy.data(), Device::CPU, {n, h}),
                               .x = xt,
                               .b = bt,
                               .dx = Out(Tensor::view_of(dx.data(), Device::CPU, {n, h})),
                               .db = Out(Tensor::view_of(db.data(), Device::CPU, {h})),
                               .workspace = Out(Tensor{})});
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
