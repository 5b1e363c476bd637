// matmul on the GPU against the CPU reference run in f64 on the same inputs (bf16-rounded where the
// GPU reads bf16): f32 with TF32 off within 1e-5, bf16 within 2e-2. Outputs are poisoned first.
// Products use positive inputs so that no output is a cancellation: the relative error then
// measures the kernel, not the conditioning of a sum that happens to be near zero.
// The bf16 bias and GELU epilogues are checked element by element against bounds derived from
// their roundings (test/kernels/bf16_bounds.h): the pre-activation against the reference, and y
// against the exact GELU of the pre-activation the GPU wrote. y against the reference GELU would
// multiply the pre-activation's rounding by GELU's relative condition number |x gelu'(x) /
// gelu(x)|, about 7.7 near x = -2.8: 2-3% from one bf16 rounding (the first H100 run).
#include <catch2/catch.hpp>
#include <utility>

#include "engine/arena.h"
#include "kernels/matmul.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"
#include "test/kernels/bf16_bounds.h"

using namespace electra;

namespace {

double tolerance(DType dtype) {
  return dtype == DType::F32 ? 1e-5 : 2e-2;
}

std::vector<double> widen(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// max_i |got_i - want_i| / bound_i: at most 1 when every element is within its bound.
double worst_over_bound(const std::vector<float>& got, const std::vector<double>& want,
                        const std::vector<double>& bound) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double ratio = std::abs(got[i] - want[i]) / bound[i];
    if (!(ratio <= worst)) worst = ratio;  // NaN included
  }
  return worst;
}

}  // namespace

TEST_CASE("matmul GPU equals CPU for every transpose combination, f32 and bf16, beta 0 and 1",
          "[matmul][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("matmul", Device::CUDA, 64 << 20);
  const int64_t m = 67, n = 45, k = 33;
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (float beta : {0.0f, 1.0f}) {
          INFO(dtype_name(dtype) << " ta " << ta << " tb " << tb << " beta " << beta);
          const size_t mark = arena.mark();
          const std::vector<float> a =
              test::as_dtype(test::random_vector<float>(m * k, 1, 0.1, 1), dtype);
          const std::vector<float> b =
              test::as_dtype(test::random_vector<float>(k * n, 2, 0.1, 1), dtype);
          const std::vector<float> c = test::as_dtype(test::random_vector<float>(m * n, 3), dtype);
          const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
          const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
          Tensor ga = test::upload_as(gpu, arena, a, dtype, {a_rows, a_cols});
          Tensor gb = test::upload_as(gpu, arena, b, dtype, {b_rows, b_cols});
          Tensor gc = test::upload_as(gpu, arena, c, dtype, {m, n});
          if (beta == 0) poison_tensor(gpu.stream(), gc);
          std::vector<double> ha = widen(a), hb = widen(b), hc = widen(c);
          matmul(cpu, test::view(ha, {a_rows, a_cols}), ta, test::view(hb, {b_rows, b_cols}), tb,
                 test::view(hc, {m, n}), 0.75f, beta);
          matmul(gpu, ga, ta, gb, tb, gc, 0.75f, beta);
          CHECK(test::max_relative_error(test::download_f32(gpu, gc), hc) < tolerance(dtype));
          arena.rewind(mark);
        }
      }
    }
  }
}

TEST_CASE("matmul GPU bias and GELU epilogues equal CPU (f32 / bf16 bias, aligned or not)",
          "[matmul][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("matmul", Device::CUDA, 64 << 20);
  const int64_t m = 130, n = 96, k = 64;
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (DType bias_dtype : {DType::F32, dtype}) {
      for (bool aligned : {true, false}) {
        INFO(dtype_name(dtype) << " bias " << dtype_name(bias_dtype) << " aligned " << aligned);
        const size_t mark = arena.mark();
        // x W^T is about 2.6 (64 positive terms near 0.04); the bias puts every other column
        // near -2 and the rest near +3: both GELU branches, no value close to zero.
        const std::vector<float> x =
            test::as_dtype(test::random_vector<float>(m * k, 4, 0.1, 0.3), dtype);
        const std::vector<float> w =
            test::as_dtype(test::random_vector<float>(n * k, 5, 0.1, 0.3), dtype);
        std::vector<float> bias = test::random_vector<float>(n + 1, 6, 0, 1);
        for (int64_t i = 0; i <= n; i += 2) bias[i] -= 5.0f;
        bias = test::as_dtype(bias, bias_dtype);
        Tensor gx = test::upload_as(gpu, arena, x, dtype, {m, k});
        Tensor gw = test::upload_as(gpu, arena, w, dtype, {n, k});
        Tensor gbias_all = test::upload_as(gpu, arena, bias, bias_dtype, {n + 1});
        // An unaligned bias (one element in) takes the unfused path.
        const int64_t skip = aligned ? 0 : 1;
        Tensor gbias =
            Tensor::view_of(static_cast<char*>(gbias_all.data) + skip * dtype_size(bias_dtype),
                            bias_dtype, Device::CUDA, {n});
        std::vector<double> hbias(bias.begin() + skip, bias.begin() + skip + n);
        Tensor hbias_t = test::view(hbias, {n});

        std::vector<double> y(m * n), pre(m * n), hx = widen(x), hw = widen(w);
        matmul(cpu, test::view(hx, {m, k}), false, test::view(hw, {n, k}), true,
               test::view(y, {m, n}), 1, 0, MatmulEpilogue{&hbias_t, nullptr});
        Tensor gy = arena.alloc(dtype, {m, n});
        poison_tensor(gpu.stream(), gy);
        matmul(gpu, gx, false, gw, true, gy, 1, 0, MatmulEpilogue{&gbias, nullptr});
        const std::vector<float> got_y = test::download_f32(gpu, gy);

        Tensor hpre_t = test::view(pre, {m, n});
        matmul(cpu, test::view(hx, {m, k}), false, test::view(hw, {n, k}), true,
               test::view(y, {m, n}), 1, 0, MatmulEpilogue{&hbias_t, &hpre_t});
        Tensor gpre = arena.alloc(dtype, {m, n});
        poison_tensor(gpu.stream(), gy);
        poison_tensor(gpu.stream(), gpre);
        matmul(gpu, gx, false, gw, true, gy, 1, 0, MatmulEpilogue{&gbias, &gpre});
        const std::vector<float> got_pre = test::download_f32(gpu, gpre);
        const std::vector<float> got_gelu = test::download_f32(gpu, gy);
        if (dtype == DType::F32) {
          CHECK(test::max_relative_error(got_y, pre) < tolerance(dtype));
          CHECK(test::max_relative_error(got_pre, pre) < tolerance(dtype));
          CHECK(test::max_relative_error(got_gelu, y) < tolerance(dtype));
        } else {
          // Bounds per element: xw = x W^T (= |x| |W|^T here: the inputs are positive).
          std::vector<double> xw(m * n), pre_bound(m * n), gelu_of_got(m * n), gelu_bound(m * n);
          matmul(cpu, test::view(hx, {m, k}), false, test::view(hw, {n, k}), true,
                 test::view(xw, {m, n}));
          for (int64_t i = 0; i < m * n; ++i) {
            pre_bound[i] = test::bf16_gemm_bias_bound(xw[i], pre[i], xw[i], k);
            gelu_of_got[i] = test::gelu_exact(got_pre[i]);
            gelu_bound[i] = test::bf16_gelu_bound(got_pre[i]);
          }
          CHECK(worst_over_bound(got_y, pre, pre_bound) <= 1);
          CHECK(worst_over_bound(got_pre, pre, pre_bound) <= 1);
          CHECK(worst_over_bound(got_gelu, gelu_of_got, gelu_bound) <= 1);
        }
        arena.rewind(mark);
      }
    }
  }
}

TEST_CASE("matmul_batched GPU equals CPU with offsets, leading dimensions and strides",
          "[matmul][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("matmul", Device::CUDA, 64 << 20);
  // Attention-like: A [37, 32] heads inside rows of 3 * 64, B^T likewise, C [37, 37] dense.
  const int64_t batch = 6, m = 37, n = 37, k = 32, ld = 192;
  for (DType dtype : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dtype));
    const size_t mark = arena.mark();
    const int64_t size = batch * m * ld;
    const std::vector<float> qkv =
        test::as_dtype(test::random_vector<float>(size, 7, 0.1, 1), dtype);
    Tensor gqkv = test::upload_as(gpu, arena, qkv, dtype, {size});
    Tensor gs = arena.alloc(dtype, {batch * m * n});
    poison_tensor(gpu.stream(), gs);
    std::vector<double> hqkv = widen(qkv), s(batch * m * n);
    const auto run = [&](Context& ctx, const Tensor& x, const Tensor& out) {
      const MatrixBatch q{x, 32, m, k, ld, m * ld};
      const MatrixBatch kk{x, 64 + 32, n, k, ld, m * ld};
      matmul_batched(ctx, q, false, kk, true, MatrixBatch{out, 0, m, n, n, m * n}, batch, 0.125f,
                     0);
    };
    run(cpu, test::view(hqkv, {size}), test::view(s, {batch * m * n}));
    run(gpu, gqkv, gs);
    CHECK(test::max_relative_error(test::download_f32(gpu, gs), s) < tolerance(dtype));
    arena.rewind(mark);
  }
}

TEST_CASE("bias_grad GPU equals CPU and is deterministic", "[matmul][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("matmul", Device::CUDA, 256 << 20);
  // Narrow (the discriminator's single output: one column over many rows), odd, and wide.
  const std::pair<int64_t, int64_t> shapes[] = {{1031, 77}, {100000, 1}, {20000, 3}, {4096, 1000}};
  for (const auto& [m, n] : shapes) {
    for (DType dtype : {DType::F32, DType::BF16}) {
      INFO(dtype_name(dtype) << " M " << m << " N " << n);
      const size_t mark = arena.mark();
      const std::vector<float> dy =
          test::as_dtype(test::random_vector<float>(m * n, 8, 0.1, 1), dtype);
      const std::vector<float> db0 = test::random_vector<float>(n, 9, 0.1, 1);
      Tensor gdy = test::upload_as(gpu, arena, dy, dtype, {m, n});
      Tensor gdb = test::upload(gpu, arena, db0, {n});
      Tensor gdb2 = test::upload(gpu, arena, db0, {n});
      std::vector<double> hdy = widen(dy), db = widen(db0);
      run_op(cpu, BiasGrad{.dy = test::view(hdy, {m, n}), .db = Out(test::view(db, {n}))});
      run_op(gpu, BiasGrad{.dy = gdy, .db = Out(gdb)});
      run_op(gpu, BiasGrad{.dy = gdy, .db = Out(gdb2)});
      const std::vector<float> got = test::download<float>(gpu, gdb);
      CHECK(test::max_relative_error(got, db) < 1e-5);
      CHECK(got == test::download<float>(gpu, gdb2));
      arena.rewind(mark);
    }
  }
}
