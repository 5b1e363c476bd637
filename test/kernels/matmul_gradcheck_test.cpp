// Gradient checks in f64: the backward of C = op(A) op(B) + bias expressed with the same wrapper
// (the way the layers use it) against central differences of loss = sum(W * C).
#include <catch2/catch.hpp>

#include "kernels/matmul.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

constexpr double kTol = 1e-6;

}  // namespace

TEST_CASE("gradcheck matmul dA, dB, dbias for every transpose combination", "[matmul]") {
  Context ctx = Context::cpu();
  const int64_t m = 5, n = 7, k = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      INFO("ta " << ta << " tb " << tb);
      std::vector<double> a = test::random_vector<double>(m * k, 41 + ta);
      std::vector<double> b = test::random_vector<double>(k * n, 43 + tb);
      std::vector<double> bias = test::random_vector<double>(n, 45);
      std::vector<double> w = test::random_vector<double>(m * n, 46);
      std::vector<double> c(m * n);
      const Tensor at = ta ? test::view(a).reshape({k, m}) : test::view(a).reshape({m, k});
      const Tensor bt = tb ? test::view(b).reshape({n, k}) : test::view(b).reshape({k, n});
      const Tensor ct = test::view(c).reshape({m, n}), wt = test::view(w).reshape({m, n});
      const Tensor biast = test::view(bias);
      const auto loss = [&] {
        matmul(ctx, at, ta, bt, tb, ct, 1, 0, MatmulEpilogue{&biast, nullptr});
        return test::weighted_sum(c, w);
      };
      // dop(A) = dC op(B)^T, dop(B) = op(A)^T dC; a transposed operand takes the transpose.
      std::vector<double> da(a.size()), db(b.size()), dbias(n, 0.0);
      const Tensor dat = ta ? test::view(da).reshape({k, m}) : test::view(da).reshape({m, k});
      const Tensor dbt = tb ? test::view(db).reshape({n, k}) : test::view(db).reshape({k, n});
      if (ta) {
        matmul(ctx, bt, tb, wt, true, dat);
      } else {
        matmul(ctx, wt, false, bt, !tb, dat);
      }
      if (tb) {
        matmul(ctx, wt, true, at, ta, dbt);
      } else {
        matmul(ctx, at, !ta, wt, false, dbt);
      }
      run_op(ctx, BiasGrad{.dy = wt, .db = Out(test::view(dbias))});
      CHECK(test::gradcheck(a, da, loss).max_relative_error < kTol);
      CHECK(test::gradcheck(b, db, loss).max_relative_error < kTol);
      CHECK(test::gradcheck(bias, dbias, loss).max_relative_error < kTol);
    }
  }
}

TEST_CASE("gradcheck matmul_batched with strided, padded operands", "[matmul]") {
  Context ctx = Context::cpu();
  const int64_t batch = 3, m = 4, n = 5, k = 3;
  // A^T stored [k, m] with ld m + 1, B [k, n] with ld n + 2 and an offset, C [m, n] dense.
  std::vector<double> a = test::random_vector<double>(batch * k * (m + 1), 51);
  std::vector<double> b = test::random_vector<double>(2 + batch * k * (n + 2), 52);
  std::vector<double> w = test::random_vector<double>(batch * m * n, 53);
  std::vector<double> c(batch * m * n);
  const MatrixBatch ma{test::view(a), 0, k, m, m + 1, k * (m + 1)};
  const MatrixBatch mb{test::view(b), 2, k, n, n + 2, k * (n + 2)};
  const MatrixBatch mc{test::view(c), 0, m, n, n, m * n};
  const MatrixBatch mw{test::view(w), 0, m, n, n, m * n};
  const auto loss = [&] {
    matmul_batched(ctx, ma, true, mb, false, mc, batch);
    return test::weighted_sum(c, w);
  };
  // C_i = A_i^T B_i: dA_i = B_i dC_i^T ([k, m]), dB_i = A_i dC_i ([k, n]); padding stays 0.
  std::vector<double> da(a.size(), 0.0), db(b.size(), 0.0);
  MatrixBatch mda = ma, mdb = mb;
  mda.storage = test::view(da);
  mdb.storage = test::view(db);
  matmul_batched(ctx, mb, false, mw, true, mda, batch);
  matmul_batched(ctx, ma, false, mw, false, mdb, batch);
  CHECK(test::gradcheck(a, da, loss).max_relative_error < kTol);
  CHECK(test::gradcheck(b, db, loss).max_relative_error < kTol);
}

TEST_CASE("gradcheck linear_forward / linear_backward (dx written, dW and db accumulated)",
          "[matmul]") {
  Context ctx = Context::cpu();
  const int64_t in = 5, out = 4;
  std::vector<double> x = test::random_vector<double>(2 * 3 * in, 61);
  std::vector<double> wgt = test::random_vector<double>(out * in, 62);
  std::vector<double> bias = test::random_vector<double>(out, 63);
  std::vector<double> g = test::random_vector<double>(2 * 3 * out, 64);
  std::vector<double> y(g.size());
  const Tensor xt = test::view(x).reshape({2, 3, in}), wt = test::view(wgt).reshape({out, in});
  const Tensor bt = test::view(bias), yt = test::view(y).reshape({2, 3, out}),
               gt = test::view(g).reshape({2, 3, out});
  const auto loss = [&] {
    linear_forward(ctx, xt, wt, bt, yt);
    return test::weighted_sum(y, g);
  };
  std::vector<double> dx(x.size(), std::nan(""));
  const std::vector<double> dw0 = test::random_vector<double>(wgt.size(), 65);
  const std::vector<double> db0 = test::random_vector<double>(bias.size(), 66);
  std::vector<double> dw = dw0, db = db0;
  linear_backward(ctx, xt, wt, gt, test::view(dx).reshape({2, 3, in}),
                  test::view(dw).reshape({out, in}), test::view(db));
  for (size_t i = 0; i < dw.size(); ++i) dw[i] -= dw0[i];
  for (size_t i = 0; i < db.size(); ++i) db[i] -= db0[i];
  CHECK(test::gradcheck(x, dx, loss).max_relative_error < kTol);
  CHECK(test::gradcheck(wgt, dw, loss).max_relative_error < kTol);
  CHECK(test::gradcheck(bias, db, loss).max_relative_error < kTol);
}
