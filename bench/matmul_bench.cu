// matmul at the linear-layer shapes of ELECTRA-Small/Base/Large (16384 tokens, bf16 in and out,
// f32 accumulation): forward y = x W^T + b (bias epilogue), dgrad dx = dy W, wgrad dW += dy^T x
// (f32 output, beta 1). Ours (the wrapper, plan cache included) against a raw cublasLtMatmul
// call with the same configuration planned once outside the timing; both beside the measured
// bf16 GEMM rate (roofline_pct). Every timed call, ours and raw, is first validated in exactly
// the timed configuration (the bf16 bias included) against an f64 reference on a slice of its
// output, element by element within bounds derived from its roundings.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/matmul.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"
#include "test/kernels/bf16_bounds.h"

using namespace electra;

namespace {

// A cuBLASLt plan built by hand: row-major C[M,N] = op(A) op(B) as column-major C^T.
struct RawGemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};

  RawGemm(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, cudaDataType_t ab,
          cudaDataType_t ct, const void* bias) {
    ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const int32_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    ELECTRA_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    ELECTRA_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    if (bias != nullptr) {
      const uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
      const int32_t bias_type = ct;
      ELECTRA_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
      ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                          &bias_type, sizeof(bias_type)));
      ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &bias, sizeof(bias)));
    }
    // Stored (row-major) shapes: B is [k, n] or [n, k], A is [m, k] or [k, m].
    const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
    const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
    ELECTRA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, ab, b_cols, b_rows, b_cols));
    ELECTRA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, ab, a_cols, a_rows, a_cols));
    ELECTRA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c, ct, n, m, n));
    cublasLtMatmulPreference_t pref;
    ELECTRA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = ctx.cublaslt_workspace_bytes();
    ELECTRA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    ELECTRA_CUBLAS_CHECK(
        cublasLtMatmulAlgoGetHeuristic(ctx.cublaslt(), desc, a, b, c, c, pref, 1, &result, &count));
    ELECTRA_CHECK(count > 0, "raw cuBLASLt: no algorithm");
    algo = result.algo;
    cublasLtMatmulPreferenceDestroy(pref);
  }
  ~RawGemm() {
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(desc);
  }
  void run(Context& ctx, const void* pa, const void* pb, void* pc, float beta) const {
    const float alpha = 1;
    ELECTRA_CUBLAS_CHECK(cublasLtMatmul(ctx.cublaslt(), desc, &alpha, pb, a, pa, b, &beta, pc, c,
                                        pc, c, &algo, ctx.cublaslt_workspace(),
                                        ctx.cublaslt_workspace_bytes(), ctx.stream()));
  }
};

// One GEMM's expected values on a slice of its output and an error bound per element, derived
// from the roundings (test/kernels/bf16_bounds.h), so that outputs near zero (zero-mean inputs, a
// bias near -x W^T) are judged by the error their terms allow, not relative to themselves.
struct Expected {
  std::vector<double> value, bound;

  void add(double value_i, double bound_i) {
    value.push_back(value_i);
    bound.push_back(bound_i);
  }
  // Prints the worst error / bound and the normwise error ||got - value|| / ||value|| of one
  // implementation; true when every element is within its bound.
  bool check(const std::string& what, const char* impl, const std::vector<float>& got) const {
    double worst = 0, diff = 0, norm = 0;
    for (size_t i = 0; i < value.size(); ++i) {
      const double err = std::abs(got[i] - value[i]);
      const double ratio = err / bound[i];
      if (!(ratio <= worst)) worst = ratio;  // NaN included
      diff += err * err;
      norm += value[i] * value[i];
    }
    std::printf("validate %s (%s): worst error / bound %.3g, normwise error %.3g\n", what.c_str(),
                impl, worst, std::sqrt(diff / norm));
    return worst <= 1;
  }
};

// Rows [0, rows) of y = x W^T + b (x [tokens, in], W [out, in], bf16 values; b the bf16 bias
// the timed call reads), with the bias epilogue's bound (fused: one bf16 rounding; unfused: two).
Expected expected_forward(const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& b, int64_t rows, int64_t in, int64_t out) {
  Expected e;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < out; ++c) {
      double xw = 0, abs_xw = 0;
      for (int64_t i = 0; i < in; ++i) {
        const double p = static_cast<double>(x[r * in + i]) * w[c * in + i];
        xw += p;
        abs_xw += std::abs(p);
      }
      e.add(xw + b[c], test::bf16_gemm_bias_bound(xw, xw + b[c], abs_xw, in));
    }
  }
  return e;
}

// Rows [0, rows) of dx = dy W (dy [tokens, out], W [out, in]), bf16 output.
Expected expected_dgrad(const std::vector<float>& dy, const std::vector<float>& w, int64_t rows,
                        int64_t in, int64_t out) {
  Expected e;
  std::vector<double> sum(in), abs_sum(in);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(abs_sum.begin(), abs_sum.end(), 0.0);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        const double p = static_cast<double>(dy[r * out + o]) * w[o * in + i];
        sum[i] += p;
        abs_sum[i] += std::abs(p);
      }
    }
    for (int64_t i = 0; i < in; ++i) {
      e.add(sum[i], test::gemm_bound(sum[i], abs_sum[i], out, test::kBf16Roundoff));
    }
  }
  return e;
}

// Rows [0, rows) of dW = dy^T x (dy [tokens, out], x [tokens, in]) accumulated into zeros, f32
// output: a sum over all tokens.
Expected expected_wgrad(const std::vector<float>& dy, const std::vector<float>& x, int64_t rows,
                        int64_t tokens, int64_t in, int64_t out) {
  Expected e;
  std::vector<double> sum(rows * in, 0.0), abs_sum(rows * in, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < rows; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        const double p = static_cast<double>(dy[t * out + o]) * x[t * in + i];
        sum[o * in + i] += p;
        abs_sum[o * in + i] += std::abs(p);
      }
    }
  }
  for (int64_t j = 0; j < rows * in; ++j) {
    e.add(sum[j], test::gemm_bound(sum[j], abs_sum[j], tokens, test::kF32Roundoff));
  }
  return e;
}

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  const int64_t tokens = 16384;
  struct Layer {
    const char* name;
    int64_t in, out;
  };
  const std::vector<Layer> layers = {
      {"small_qkv", 256, 768},   {"small_ffn1", 256, 1024},  {"small_ffn2", 1024, 256},
      {"base_qkv", 768, 2304},   {"base_ffn1", 768, 3072},   {"base_ffn2", 3072, 768},
      {"large_qkv", 1024, 3072}, {"large_ffn1", 1024, 4096}, {"large_ffn2", 4096, 1024},
  };
  Arena arena("bench", Device::CUDA, size_t{1} << 30);
  for (const Layer& l : layers) {
    const size_t mark = arena.mark();
    const std::vector<float> x = test::random_vector<float>(tokens * l.in, 1);
    const std::vector<float> w = test::random_vector<float>(l.out * l.in, 2, -0.05, 0.05);
    const std::vector<float> bias = test::random_vector<float>(l.out, 3);
    const Tensor gx = test::upload_bf16(ctx, arena, x, {tokens, l.in});
    const Tensor gw = test::upload_bf16(ctx, arena, w, {l.out, l.in});
    const Tensor gb = test::upload_bf16(ctx, arena, bias, {l.out});
    const Tensor gy = arena.alloc<bf16>({tokens, l.out});
    const Tensor gdx = arena.alloc<bf16>({tokens, l.in});
    const Tensor gdw = arena.alloc<float>({l.out, l.in});
    const MatmulEpilogue epi{&gb, nullptr};
    const RawGemm raw_fwd(ctx, false, true, tokens, l.out, l.in, CUDA_R_16BF, CUDA_R_16BF, gb.data);
    const RawGemm raw_dgrad(ctx, false, false, tokens, l.in, l.out, CUDA_R_16BF, CUDA_R_16BF,
                            nullptr);
    const RawGemm raw_wgrad(ctx, true, false, l.out, l.in, tokens, CUDA_R_16BF, CUDA_R_32F,
                            nullptr);

    // Validation of every timed call (ours and raw) on a slice of its output: the first 64
    // rows of y and dx, the first 8 rows of dW (each a sum over all tokens).
    const int64_t rows = 64, dw_rows = 8;
    const std::vector<float> xb = test::as_dtype(x, DType::BF16);
    const std::vector<float> wb = test::as_dtype(w, DType::BF16);
    const std::string name =
        std::string(l.name) + " " + std::to_string(l.in) + "x" + std::to_string(l.out);
    bool ok = true;
    const Expected fwd_want =
        expected_forward(xb, wb, test::as_dtype(bias, DType::BF16), rows, l.in, l.out);
    matmul(ctx, gx, false, gw, true, gy, 1, 0, epi);
    ok &= fwd_want.check("forward " + name, "ours", test::download_f32(ctx, gy.rows(0, rows)));
    raw_fwd.run(ctx, gx.data, gw.data, gy.data, 0);
    ok &= fwd_want.check("forward " + name, "cublaslt_raw",
                         test::download_f32(ctx, gy.rows(0, rows)));
    // dgrad and wgrad read y as the timed calls do (the raw forward's output).
    const std::vector<float> y = test::download_f32(ctx, gy);
    const Expected dgrad_want = expected_dgrad(y, wb, rows, l.in, l.out);
    matmul(ctx, gy, false, gw, false, gdx);
    ok &= dgrad_want.check("dgrad " + name, "ours", test::download_f32(ctx, gdx.rows(0, rows)));
    raw_dgrad.run(ctx, gy.data, gw.data, gdx.data, 0);
    ok &= dgrad_want.check("dgrad " + name, "cublaslt_raw",
                           test::download_f32(ctx, gdx.rows(0, rows)));
    const Expected wgrad_want = expected_wgrad(y, xb, dw_rows, tokens, l.in, l.out);
    zero_tensor(ctx.stream(), gdw);
    matmul(ctx, gy, true, gx, false, gdw, 1, 1);
    ok &= wgrad_want.check("wgrad " + name, "ours", test::download_f32(ctx, gdw.rows(0, dw_rows)));
    zero_tensor(ctx.stream(), gdw);
    raw_wgrad.run(ctx, gy.data, gx.data, gdw.data, 1);
    ok &= wgrad_want.check("wgrad " + name, "cublaslt_raw",
                           test::download_f32(ctx, gdw.rows(0, dw_rows)));
    if (!ok) {
      std::printf("FAILED validation of %s\n", l.name);
      return 1;
    }
    const double flops = 2.0 * tokens * l.in * l.out;
    const std::string shape =
        std::to_string(tokens) + "x" + std::to_string(l.in) + "x" + std::to_string(l.out);
    const double bytes_fwd = 2.0 * (tokens * l.in + l.in * l.out + tokens * l.out);

    const double fwd =
        bench::time_median_ms(ctx, [&] { matmul(ctx, gx, false, gw, true, gy, 1, 0, epi); });
    bench::report(ctx, "matmul_fwd_bias", l.name + std::string("_") + shape, "ours", fwd, bytes_fwd,
                  flops);
    const double fwd_raw =
        bench::time_median_ms(ctx, [&] { raw_fwd.run(ctx, gx.data, gw.data, gy.data, 0); });
    bench::report(ctx, "matmul_fwd_bias", l.name + std::string("_") + shape, "cublaslt_raw",
                  fwd_raw, bytes_fwd, flops);

    const double dgrad =
        bench::time_median_ms(ctx, [&] { matmul(ctx, gy, false, gw, false, gdx); });
    bench::report(ctx, "matmul_dgrad", l.name + std::string("_") + shape, "ours", dgrad, bytes_fwd,
                  flops);
    const double dgrad_raw =
        bench::time_median_ms(ctx, [&] { raw_dgrad.run(ctx, gy.data, gw.data, gdx.data, 0); });
    bench::report(ctx, "matmul_dgrad", l.name + std::string("_") + shape, "cublaslt_raw", dgrad_raw,
                  bytes_fwd, flops);

    const double bytes_wgrad = 2.0 * (tokens * l.in + tokens * l.out) + 8.0 * l.in * l.out;
    const double wgrad =
        bench::time_median_ms(ctx, [&] { matmul(ctx, gy, true, gx, false, gdw, 1, 1); });
    bench::report(ctx, "matmul_wgrad", l.name + std::string("_") + shape, "ours", wgrad,
                  bytes_wgrad, flops);
    const double wgrad_raw =
        bench::time_median_ms(ctx, [&] { raw_wgrad.run(ctx, gy.data, gx.data, gdw.data, 1); });
    bench::report(ctx, "matmul_wgrad", l.name + std::string("_") + shape, "cublaslt_raw", wgrad_raw,
                  bytes_wgrad, flops);
    arena.rewind(mark);
  }
  return 0;
}
