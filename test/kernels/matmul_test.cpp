// matmul on the CPU against the triple loop and by the bits it promises (k-order FMA chains at
// any thread count, batched and grouped calls equal to their single calls), its epilogues and
// batch layouts, and the arguments it refuses (wrong shapes and dtypes: matmul_contract_test).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/matmul.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// Element (r, c) of op(X) for matrix i of a batch.
template <class T>
double op_at(const std::vector<T>& x, const MatrixBatch& m, int64_t i, bool trans, int64_t r,
             int64_t c) {
  if (trans) std::swap(r, c);
  return static_cast<double>(x[m.offset + i * m.stride + r * m.ld + c]);
}

// C_i = alpha op(A_i) op(B_i) + beta C_i by the triple loop, in double.
template <class T>
std::vector<double> naive(const std::vector<T>& a, const MatrixBatch& ma, bool ta,
                          const std::vector<T>& b, const MatrixBatch& mb, bool tb,
                          const std::vector<T>& c, const MatrixBatch& mc, int64_t batch,
                          double alpha, double beta) {
  std::vector<double> out(c.begin(), c.end());
  const int64_t k_dim = ta ? ma.rows : ma.cols;
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t r = 0; r < mc.rows; ++r) {
      for (int64_t col = 0; col < mc.cols; ++col) {
        double s = 0;
        for (int64_t k = 0; k < k_dim; ++k)
          s += op_at(a, ma, i, ta, r, k) * op_at(b, mb, i, tb, k, col);
        const int64_t at = mc.offset + i * mc.stride + r * mc.ld + col;
        out[at] = alpha * s + (beta == 0 ? 0.0 : beta * static_cast<double>(c[at]));
      }
    }
  }
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("matmul equals the triple loop for every transpose combination", "[matmul]",
                   float, double) {
  Context ctx = Context::cpu();
  const int64_t m = 5, n = 7, k = 3;
  const double tol = std::is_same_v<TestType, float> ? 1e-5 : 1e-13;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (double beta : {0.0, 1.0, -0.5}) {
        // Positive A and B: no output is a cancellation, so f32 rounding stays near 1e-7.
        std::vector<TestType> a = test::random_vector<TestType>(m * k, 1 + ta, 0.1, 1);
        std::vector<TestType> b = test::random_vector<TestType>(k * n, 3 + tb, 0.1, 1);
        std::vector<TestType> c = test::random_vector<TestType>(m * n, 5);
        Tensor ta_t = ta ? test::view(a, {k, m}) : test::view(a, {m, k});
        Tensor tb_t = tb ? test::view(b, {n, k}) : test::view(b, {k, n});
        const auto expect = naive(a, as_matrix(ta_t), ta, b, as_matrix(tb_t), tb, c,
                                  as_matrix(test::view(c, {m, n})), 1, 1.5, beta);
        matmul(ctx, ta_t, ta, tb_t, tb, test::view(c, {m, n}), 1.5f, static_cast<float>(beta));
        INFO("ta " << ta << " tb " << tb << " beta " << beta);
        CHECK(test::max_relative_error(c, expect) < tol);
      }
    }
  }
}

TEST_CASE("matmul with beta 0 never reads C and views rank-3 tensors as matrices", "[matmul]") {
  Context ctx = Context::cpu();
  std::vector<float> x = test::random_vector<float>(2 * 3 * 4, 7);
  std::vector<float> w = test::random_vector<float>(5 * 4, 8);
  std::vector<float> y(2 * 3 * 5, std::numeric_limits<float>::quiet_NaN());
  matmul(ctx, test::view(x, {2, 3, 4}), false, test::view(w, {5, 4}), true,
         test::view(y, {2, 3, 5}));
  const auto expect =
      naive(x, MatrixBatch{test::view(x, {6, 4}), 0, 6, 4, 4, 0}, false, w,
            MatrixBatch{test::view(w, {5, 4}), 0, 5, 4, 4, 0}, true, std::vector<float>(30, 0.0f),
            MatrixBatch{test::view(y, {6, 5}), 0, 6, 5, 5, 0}, 1, 1.0, 0.0);
  CHECK(test::max_relative_error(y, expect) < 1e-5);
}

TEST_CASE("matmul bias and exact-erf GELU epilogues", "[matmul]") {
  Context ctx = Context::cpu();
  const int64_t m = 6, n = 5, k = 4;
  std::vector<double> a = test::random_vector<double>(m * k, 11, -2, 2);
  std::vector<double> w = test::random_vector<double>(n * k, 12, -2, 2);
  std::vector<double> bias = test::random_vector<double>(n, 13);
  std::vector<double> y(m * n, std::nan("")), pre(m * n, std::nan(""));
  Tensor bias_t = test::view(bias, {n});
  Tensor pre_t = test::view(pre, {m, n});
  matmul(ctx, test::view(a, {m, k}), false, test::view(w, {n, k}), true, test::view(y, {m, n}), 1,
         0, MatmulEpilogue{&bias_t, &pre_t});
  std::vector<double> biased(m * n);
  int negative = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double s = bias[c];
      for (int64_t i = 0; i < k; ++i) s += a[r * k + i] * w[c * k + i];
      biased[r * n + c] = s;
      negative += s < 0;
    }
  }
  REQUIRE(negative > 0);  // GELU's negative branch is exercised
  CHECK(test::max_relative_error(pre, biased) < 1e-14);
  std::vector<double> gelu(m * n);
  for (size_t i = 0; i < gelu.size(); ++i) {
    gelu[i] = biased[i] * 0.5 * std::erfc(-biased[i] / std::sqrt(2.0));
  }
  CHECK(test::max_relative_error(y, gelu) < 1e-13);
  std::vector<double> only_bias(m * n, std::nan(""));
  matmul(ctx, test::view(a, {m, k}), false, test::view(w, {n, k}), true,
         test::view(only_bias, {m, n}), 1, 0, MatmulEpilogue{&bias_t, nullptr});
  CHECK(test::max_relative_error(only_bias, biased) < 1e-14);
}

TEST_CASE("matmul_batched honours offsets, leading dimensions and strides", "[matmul]") {
  Context ctx = Context::cpu();
  const int64_t batch = 3, m = 4, n = 3, k = 5;
  // A: op(A) = A [m, k] with ld k + 2 and one element of offset; B^T stored [n, k], ld k + 1;
  // C: [m, n] with ld n + 3 (padding columns must stay untouched).
  std::vector<double> a = test::random_vector<double>(1 + batch * m * (k + 2), 21);
  std::vector<double> b = test::random_vector<double>(batch * n * (k + 1), 22);
  std::vector<double> c = test::random_vector<double>(batch * m * (n + 3), 23);
  const MatrixBatch ma{
      test::view(a, {static_cast<int64_t>(a.size())}), 1, m, k, k + 2, m * (k + 2)};
  const MatrixBatch mb{
      test::view(b, {static_cast<int64_t>(b.size())}), 0, n, k, k + 1, n * (k + 1)};
  const MatrixBatch mc{
      test::view(c, {static_cast<int64_t>(c.size())}), 0, m, n, n + 3, m * (n + 3)};
  const auto expect = naive(a, ma, false, b, mb, true, c, mc, batch, 0.5, 2.0);
  matmul_batched(ctx, ma, false, mb, true, mc, batch, 0.5f, 2.0f);
  CHECK(test::max_relative_error(c, expect) < 1e-14);
}

// The f32 CPU GEMM's contract (kernels/packed_gemm_cpu.h): every element is
// c = (beta == 0 ? 0 : beta * c_old), then c = fma(alpha * a_ik, b_kj, c) for k in order, then
// + bias. The shapes cross the register tile, the task blocks and the blocks of K (256) with
// partial edges; the bits must be those of that scalar loop at 1 and 3 threads.
TEST_CASE("f32 matmul is one FMA chain in k order per element at any thread count", "[matmul]") {
  struct Case {
    int64_t m, n, k;
    bool ta, tb;
    float alpha, beta;
    bool bias;
  };
  const std::vector<Case> cases = {
      {37, 70, 600, false, false, 1, 0, false}, {200, 300, 90, false, true, 1, 0, true},
      {130, 45, 513, true, false, 1, 1, false}, {29, 260, 257, true, true, 1.5f, -0.5f, false},
      {1, 1, 1, false, false, 1, 1, false},     {300, 33, 40, false, true, 0.5f, 1, true}};
  for (const Case& t : cases) {
    std::vector<float> a = test::random_vector<float>(t.m * t.k, 41);
    std::vector<float> b = test::random_vector<float>(t.k * t.n, 42);
    std::vector<float> bias = test::random_vector<float>(t.n, 43);
    const std::vector<float> c0 = test::random_vector<float>(t.m * t.n, 44);
    std::vector<float> expect(c0);
    for (int64_t r = 0; r < t.m; ++r) {
      for (int64_t col = 0; col < t.n; ++col) {
        float acc = t.beta == 0 ? 0.0f : t.beta * c0[r * t.n + col];
        for (int64_t i = 0; i < t.k; ++i) {
          const float x = t.ta ? a[i * t.m + r] : a[r * t.k + i];
          const float y = t.tb ? b[col * t.k + i] : b[i * t.n + col];
          acc = std::fma(t.alpha * x, y, acc);
        }
        expect[r * t.n + col] = t.bias ? acc + bias[col] : acc;
      }
    }
    Tensor a_t = t.ta ? test::view(a, {t.k, t.m}) : test::view(a, {t.m, t.k});
    Tensor b_t = t.tb ? test::view(b, {t.n, t.k}) : test::view(b, {t.k, t.n});
    Tensor bias_t = test::view(bias, {t.n});
    for (int threads : {1, 3}) {
      Context ctx = Context::cpu(0, Precision::F32, threads);
      std::vector<float> c(c0);
      matmul(ctx, a_t, t.ta, b_t, t.tb, test::view(c, {t.m, t.n}), t.alpha, t.beta,
             MatmulEpilogue{t.bias ? &bias_t : nullptr, nullptr});
      INFO(t.m << "x" << t.n << "x" << t.k << " ta " << t.ta << " tb " << t.tb << " threads "
               << threads);
      CHECK(std::memcmp(c.data(), expect.data(), c.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("bias_grad accumulates column sums", "[matmul]") {
  Context ctx = Context::cpu();
  std::vector<float> dy = test::random_vector<float>(4 * 3 * 5, 31);
  std::vector<float> db = {1, 2, 3, 4, 5};
  std::vector<double> expect(db.begin(), db.end());
  for (int r = 0; r < 12; ++r) {
    for (int c = 0; c < 5; ++c) expect[c] += dy[r * 5 + c];
  }
  run_op(ctx, BiasGrad{.dy = test::view(dy, {4, 3, 5}), .db = Out(test::view(db, {5}))});
  CHECK(test::max_relative_error(db, expect) < 1e-6);
}

// The encoder's batched weight gradients (models/linear_stack.h) rely on this: dW_i += dY_i^T X_i
// as one strided batch gives every matrix the bits of its own GEMM, in f32 (the packed GEMM) and
// in f64 (the gradient checks' Eigen tiles). C's matrices sit at a stride with a gap between them
// (the layers' parameter stride), which must stay untouched.
TEMPLATE_TEST_CASE("a strided batch of dW += dY^T X gives each matrix the bits of its own GEMM",
                   "[matmul]", float, double) {
  const int64_t batch = 3, rows = 300, in = 40, out = 70, gap = 64;
  const int64_t stride = out * in + gap;
  const std::vector<TestType> dy = test::random_vector<TestType>(batch * rows * out, 51);
  const std::vector<TestType> x = test::random_vector<TestType>(batch * rows * in, 52);
  const std::vector<TestType> dw0 = test::random_vector<TestType>(batch * stride, 53);
  std::vector<TestType> single(dw0), batched(dw0);
  Context ctx = Context::cpu(0, Precision::F32, 3);
  for (int64_t i = 0; i < batch; ++i) {
    auto* dy_i = const_cast<TestType*>(dy.data()) + i * rows * out;
    auto* x_i = const_cast<TestType*>(x.data()) + i * rows * in;
    matmul(ctx, Tensor::view_of(dy_i, Device::CPU, {rows, out}), true,
           Tensor::view_of(x_i, Device::CPU, {rows, in}), false,
           Tensor::view_of(single.data() + i * stride, Device::CPU, {out, in}), 1, 1);
  }
  const auto all = [](const std::vector<TestType>& v) {
    return test::view(const_cast<std::vector<TestType>&>(v), {static_cast<int64_t>(v.size())});
  };
  matmul_batched(ctx, MatrixBatch{all(dy), 0, rows, out, out, rows * out}, true,
                 MatrixBatch{all(x), 0, rows, in, in, rows * in}, false,
                 MatrixBatch{all(batched), 0, out, in, in, stride}, batch, 1, 1);
  CHECK(std::memcmp(batched.data(), single.data(), batched.size() * sizeof(TestType)) == 0);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = out * in; j < stride; ++j)
      CHECK(batched[i * stride + j] == dw0[i * stride + j]);
  }
}

TEMPLATE_TEST_CASE("bias_grad in groups gives each group the bits of its own call", "[matmul]",
                   float, double) {
  const int64_t groups = 3, m = 257, n = 70, stride = 100;
  const std::vector<TestType> dy = test::random_vector<TestType>(groups * m * n, 61);
  const std::vector<TestType> db0 = test::random_vector<TestType>((groups - 1) * stride + n, 62);
  std::vector<TestType> single(db0), grouped(db0);
  Context ctx = Context::cpu(0, Precision::F32, 3);
  auto* dy_data = const_cast<TestType*>(dy.data());
  for (int64_t g = 0; g < groups; ++g) {
    run_op(ctx, BiasGrad{.dy = Tensor::view_of(dy_data + g * m * n, Device::CPU, {m, n}),
                         .db = Out(Tensor::view_of(single.data() + g * stride, Device::CPU, {n}))});
  }
  run_op(ctx, BiasGrad{.dy = Tensor::view_of(dy_data, Device::CPU, {groups, m, n}),
                       .db = Out(test::view(grouped, {static_cast<int64_t>(grouped.size())})),
                       .groups = groups,
                       .db_stride = stride});
  CHECK(std::memcmp(grouped.data(), single.data(), grouped.size() * sizeof(TestType)) == 0);
  CHECK(grouped[n] == db0[n]);  // between the groups' sums: untouched
  CHECK_THROWS_WITH(
      run_op(ctx, BiasGrad{.dy = Tensor::view_of(dy_data, Device::CPU, {groups, m, n}),
                           .db = Out(test::view(grouped, {n})),
                           .groups = groups,
                           .db_stride = stride}),
      Catch::Contains("in 3 groups"));
}

// Wrong shapes and dtypes of A, B, C and the bias: matmul_contract_test.
TEST_CASE("matmul refuses a pre-GELU output with beta != 0 and a batch past its storage",
          "[matmul]") {
  Context ctx = Context::cpu();
  std::vector<float> a(5 * 3, 1.0f), b(4 * 7, 1.0f), c(5 * 7, 0.0f);
  Tensor pre_t = test::view(c, {5, 7});
  CHECK_THROWS_WITH(matmul(ctx, test::view(a, {5, 3}), false, test::view(b, {3, 7}), false,
                           test::view(c, {5, 7}), 1, 1, MatmulEpilogue{nullptr, &pre_t}),
                    Catch::Contains("beta == 0"));
  const MatrixBatch ma{test::view(a, {15}), 0, 5, 3, 3, 15};
  const MatrixBatch mb{test::view(b, {28}), 0, 3, 7, 7, 21};
  const MatrixBatch mc{test::view(c, {35}), 0, 5, 7, 7, 35};
  CHECK_THROWS_WITH(matmul_batched(ctx, ma, false, mb, false, mc, 2),
                    Catch::Contains("A (2 x 5x3") && Catch::Contains("reaches element 30"));
}

// What a GEMM declares it launches on a GPU (kernels/op_call.h; the op harness checks it against
// captured graphs): cuBLASLt's bias epilogue takes a 16-byte aligned bias of C's dtype only, so an
// f32 bias with a bf16 C, or a misaligned one, costs the epilogue kernel too, as GELU always does.
TEST_CASE("matmul declares its bias fused only when aligned and of C's dtype", "[matmul]") {
  alignas(16) static float f32_data[64];
  alignas(16) static uint16_t bf16_data[64];
  const Tensor f32 = Tensor::view_of(f32_data, DType::F32, Device::CUDA, {8, 8});
  const Tensor bf16 = Tensor::view_of(bf16_data, DType::BF16, Device::CUDA, {8, 8});
  const Tensor f32_bias = Tensor::view_of(f32_data, DType::F32, Device::CUDA, {8});
  const Tensor bf16_bias = Tensor::view_of(bf16_data, DType::BF16, Device::CUDA, {8});
  const Tensor misaligned = Tensor::view_of(f32_data + 1, DType::F32, Device::CUDA, {8});
  auto gemm = [](const Tensor& c, MatmulEpilogue e) {
    return Gemm{.a = as_matrix(c), .b = as_matrix(c), .c = as_matrix(c), .epilogue = e};
  };
  using L = Launches;
  CHECK(gemm(f32, {}).launches() == L{.kernels = 0, .library_calls = 1});
  CHECK(gemm(f32, {&f32_bias, nullptr}).launches() == L{.kernels = 0, .library_calls = 1});
  CHECK(gemm(bf16, {&bf16_bias, nullptr}).launches() == L{.kernels = 0, .library_calls = 1});
  CHECK(gemm(bf16, {&f32_bias, nullptr}).launches() == L{.kernels = 1, .library_calls = 1});
  CHECK(gemm(f32, {&misaligned, nullptr}).launches() == L{.kernels = 1, .library_calls = 1});
  CHECK(gemm(f32, {&f32_bias, &f32}).launches() == L{.kernels = 1, .library_calls = 1});
}
