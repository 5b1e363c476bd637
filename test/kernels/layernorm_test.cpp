// layernorm on the CPU: normalised rows have mean 0 and variance 1 before the affine map, the
// saved statistics, dx written (not added), dy_dropout and the fused residual variant against the
// ops they fuse, and the refused arguments (the gradients, their +=: layernorm_gradcheck_test;
// wrong shapes and dtypes: layernorm_contract_test).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/dropout.h"
#include "kernels/layernorm.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// layernorm_forward of x [n, h].
template <class T>
void forward(Context& ctx, std::vector<T>& x, std::vector<T>& gamma, std::vector<T>& beta,
             int64_t n, int64_t h, std::vector<T>& y, std::vector<T>& mean, std::vector<T>& rstd,
             float eps = 1e-12f) {
  run_op(ctx, LayerNormForward{.x = test::view(x, {n, h}),
                               .gamma = test::view(gamma, {h}),
                               .beta = test::view(beta, {h}),
                               .eps = eps,
                               .y = Out(test::view(y, {n, h})),
                               .mean = Out(test::view(mean, {n})),
                               .rstd = Out(test::view(rstd, {n}))});
}

// layernorm_backward of dy [n, h], dy dropped first by `site` (p = 0: as it is).
void backward(Context& ctx, std::vector<float>& dy, std::vector<float>& x,
              std::vector<float>& gamma, std::vector<float>& mean, std::vector<float>& rstd,
              int64_t n, int64_t h, std::vector<float>& dx, std::vector<float>& dgamma,
              std::vector<float>& dbeta, DropoutSite site = {}) {
  run_op(ctx, LayerNormBackward{.dy = test::view(dy, {n, h}),
                                .x = test::view(x, {n, h}),
                                .gamma = test::view(gamma, {h}),
                                .mean = test::view(mean, {n}),
                                .rstd = test::view(rstd, {n}),
                                .dy_dropout = site,
                                .dx = Out(test::view(dx, {n, h})),
                                .dgamma = Out(test::view(dgamma, {h})),
                                .dbeta = Out(test::view(dbeta, {h})),
                                .workspace = Out(Tensor{})});
}

}  // namespace

TEST_CASE("layernorm rows have mean 0 and variance 1 before gamma and beta", "[layernorm]") {
  Context ctx = Context::cpu();
  const int64_t n = 6, h = 37;
  std::vector<double> x = test::random_vector<double>(n * h, 1, -3, 5);
  std::vector<double> ones(h, 1.0), zeros(h, 0.0), y(n * h), mean(n), rstd(n);
  forward(ctx, x, ones, zeros, n, h, y, mean, rstd);
  for (int64_t r = 0; r < n; ++r) {
    double m = 0, v = 0, xm = 0;
    for (int64_t j = 0; j < h; ++j) m += y[r * h + j], xm += x[r * h + j];
    m /= h;
    xm /= h;
    for (int64_t j = 0; j < h; ++j) v += (y[r * h + j] - m) * (y[r * h + j] - m);
    CHECK(std::abs(m) < 1e-14);
    CHECK(v / h == Approx(1.0).epsilon(1e-12));
    CHECK(mean[r] == Approx(xm).epsilon(1e-14));
    double var = 0;
    for (int64_t j = 0; j < h; ++j) var += (x[r * h + j] - xm) * (x[r * h + j] - xm);
    CHECK(rstd[r] == Approx(1.0 / std::sqrt(var / h + 1e-12)).epsilon(1e-12));
  }
  // The affine map: y' = y * gamma + beta.
  std::vector<double> gamma = test::random_vector<double>(h, 2),
                      beta = test::random_vector<double>(h, 3);
  std::vector<double> y2(n * h);
  forward(ctx, x, gamma, beta, n, h, y2, mean, rstd);
  for (int64_t i = 0; i < n * h; ++i) {
    REQUIRE(y2[i] == Approx(y[i] * gamma[i % h] + beta[i % h]).epsilon(1e-12).margin(1e-14));
  }
}

// The gradient check's dx starts at 0, so an added dx would pass there.
TEST_CASE("layernorm backward writes dx over what it held", "[layernorm]") {
  Context ctx = Context::cpu();
  const int64_t n = 5, h = 11;
  std::vector<float> x = test::random_vector<float>(n * h, 4, -2, 2);
  std::vector<float> gamma = test::random_vector<float>(h, 5, 0.5, 1.5);
  std::vector<float> beta = test::random_vector<float>(h, 6);
  std::vector<float> dy = test::random_vector<float>(n * h, 7);
  std::vector<float> y(n * h), mean(n), rstd(n), dx(n * h, 99.0f), dgamma(h, 0.0f), dbeta(h, 0.0f);
  forward(ctx, x, gamma, beta, n, h, y, mean, rstd);
  backward(ctx, dy, x, gamma, mean, rstd, n, h, dx, dgamma, dbeta);
  const std::vector<float> dx1 = dx;
  backward(ctx, dy, x, gamma, mean, rstd, n, h, dx, dgamma, dbeta);
  CHECK(dx == dx1);
}

// The embeddings' backward: dy_dropout drops dy as the dropout op would, then the backward runs
// on it (the CPU forms the dropped dy in dx): the bits of the two ops one after the other, at 1
// and 3 threads; p = 0 reads dy as it is.
TEST_CASE("layernorm backward with dy_dropout gives the bits of dropout then the backward",
          "[layernorm]") {
  const int64_t n = 70, h = 24;
  std::vector<float> x = test::random_vector<float>(n * h, 4, -2, 2);
  std::vector<float> gamma = test::random_vector<float>(h, 5, 0.5, 1.5);
  std::vector<float> dy = test::random_vector<float>(n * h, 7);
  std::vector<float> y(n * h), mean(n), rstd(n);
  for (const int threads : {1, 3}) {
    Context ctx = Context::cpu(threads);
    forward(ctx, x, gamma, gamma, n, h, y, mean, rstd);
    for (const float p : {0.0f, 0.2f}) {
      const DropoutSite site{ctx.rng(RngPurpose::kDropout, 3), dropout_site_offset(1) + 5, p};
      std::vector<float> dropped(n * h);
      run_op(ctx, Dropout{.x = test::view(dy), .site = site, .y = Out(test::view(dropped))});
      std::vector<float> dx(n * h), dgamma(h, 0.5f), dbeta(h, 0.25f);
      std::vector<float> want_dx(n * h), want_dgamma(h, 0.5f), want_dbeta(h, 0.25f);
      std::vector<float> in = dy;
      backward(ctx, in, x, gamma, mean, rstd, n, h, dx, dgamma, dbeta, site);
      CHECK(in == dy);  // dy is only read
      backward(ctx, dropped, x, gamma, mean, rstd, n, h, want_dx, want_dgamma, want_dbeta);
      CHECK(dx == want_dx);
      CHECK(dgamma == want_dgamma);
      CHECK(dbeta == want_dbeta);
      if (p > 0) CHECK(dropped != dy);
    }
  }
}

TEST_CASE("residual layernorm normalises dropout(x) + residual and saves that sum", "[layernorm]") {
  Context ctx = Context::cpu(3);
  const int64_t n = 4, h = 24;
  std::vector<float> x = test::random_vector<float>(n * h, 8, -1, 1, true);
  std::vector<float> res = test::random_vector<float>(n * h, 9);
  std::vector<float> gamma = test::random_vector<float>(h, 10, 0.5, 1.5);
  std::vector<float> beta = test::random_vector<float>(h, 11);
  for (float p : {0.0f, 0.2f}) {
    const DropoutSite site{ctx.rng(RngPurpose::kDropout, 4), dropout_site_offset(6), p};
    std::vector<float> sum(n * h), y(n * h), mean(n), rstd(n);
    run_op(ctx, ResidualLayerNormForward{.x = test::view(x, {n, h}),
                                         .residual = test::view(res, {n, h}),
                                         .site = site,
                                         .gamma = test::view(gamma, {h}),
                                         .beta = test::view(beta, {h}),
                                         .eps = 1e-12f,
                                         .sum = Out(test::view(sum, {n, h})),
                                         .y = Out(test::view(y, {n, h})),
                                         .mean = Out(test::view(mean, {n})),
                                         .rstd = Out(test::view(rstd, {n}))});
    std::vector<float> dropped(n * h), expect_sum(n * h), expect_y(n * h), m2(n), r2(n);
    run_op(
        ctx,
        Dropout{.x = test::view(x, {n * h}), .site = site, .y = Out(test::view(dropped, {n * h}))});
    for (int64_t i = 0; i < n * h; ++i) expect_sum[i] = dropped[i] + res[i];
    CHECK(sum == expect_sum);
    forward(ctx, expect_sum, gamma, beta, n, h, expect_y, m2, r2);
    CHECK(y == expect_y);
    CHECK(mean == m2);
    CHECK(rstd == r2);
    if (p == 0.0f) {
      for (int64_t i = 0; i < n * h; ++i) REQUIRE(sum[i] == x[i] + res[i]);
    }
  }
}

TEST_CASE("layernorm refuses eps <= 0 and p = 1", "[layernorm]") {
  Context ctx = Context::cpu();
  std::vector<float> x(12, 1.0f), g(4, 1.0f), b(4, 0.0f), y(12), m(3), r(3);
  CHECK_THROWS_WITH(forward(ctx, x, g, b, 3, 4, y, m, r, 0.0f), Catch::Contains("eps"));
  std::vector<float> res(12), sum(12);
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 0), 0, 1.0f};
  CHECK_THROWS_WITH(run_op(ctx, ResidualLayerNormForward{.x = test::view(x, {3, 4}),
                                                         .residual = test::view(res, {3, 4}),
                                                         .site = site,
                                                         .gamma = test::view(g, {4}),
                                                         .beta = test::view(b, {4}),
                                                         .eps = 1e-12f,
                                                         .sum = Out(test::view(sum, {3, 4})),
                                                         .y = Out(test::view(y, {3, 4})),
                                                         .mean = Out(test::view(m, {3})),
                                                         .rstd = Out(test::view(r, {3}))}),
                    Catch::Contains("[0, 1)"));
  std::vector<float> dx(12), dg(4), db(4);
  CHECK_THROWS_WITH(backward(ctx, x, x, g, m, r, 3, 4, dx, dg, db, site),
                    Catch::Contains("[0, 1)"));
}
