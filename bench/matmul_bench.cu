// matmul at the linear-layer shapes of ELECTRA-Small/Base/Large (16384 tokens, bf16 in and out,
// f32 accumulation): forward y = x W^T + b (bias epilogue), dgrad dx = dy W, wgrad dW += dy^T x
// (f32 output, beta 1). Ours (the wrapper, plan cache included) against a raw cublasLtMatmul
// call with the same configuration planned once outside the timing; both beside the measured
// bf16 GEMM rate (roofline_pct). Ours is validated against the CPU on a slice of rows first.
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/matmul.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

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

// ours on the first `rows` rows of y = x W^T + b against the CPU in f32 (bf16-rounded inputs).
bool validate_forward(Context& ctx, const std::vector<float>& x, const std::vector<float>& w,
                      const std::vector<float>& bias, const Tensor& y, int64_t in, int64_t out) {
  const int64_t rows = 64;
  std::vector<float> xs(x.begin(), x.begin() + rows * in), ws = w, bs = bias;
  xs = test::as_dtype(std::move(xs), DType::BF16);
  ws = test::as_dtype(std::move(ws), DType::BF16);
  std::vector<float> ref(rows * out);
  Context cpu = Context::cpu();
  linear_forward(cpu, Tensor::view_of(xs.data(), Device::CPU, {rows, in}),
                 Tensor::view_of(ws.data(), Device::CPU, {out, in}),
                 Tensor::view_of(bs.data(), Device::CPU, {out}),
                 Tensor::view_of(ref.data(), Device::CPU, {rows, out}));
  const std::vector<float> got = test::download_f32(ctx, y.rows(0, rows));
  const double err = test::max_relative_error(got, ref);
  std::printf("validate matmul forward %ldx%ld: max rel err %.3g\n", static_cast<long>(in),
              static_cast<long>(out), err);
  return err < 2e-2;
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
    const Tensor gbias32 = test::upload(ctx, arena, bias, {l.out});
    const Tensor gy = arena.alloc<bf16>({tokens, l.out});
    const Tensor gdx = arena.alloc<bf16>({tokens, l.in});
    const Tensor gdw = arena.alloc<float>({l.out, l.in});
    zero_tensor(ctx.stream(), gdw);
    linear_forward(ctx, gx, gw, gbias32, gy);
    if (!validate_forward(ctx, x, w, bias, gy, l.in, l.out)) {
      std::printf("FAILED validation of %s\n", l.name);
      return 1;
    }
    const double flops = 2.0 * tokens * l.in * l.out;
    const std::string shape =
        std::to_string(tokens) + "x" + std::to_string(l.in) + "x" + std::to_string(l.out);
    const double bytes_fwd = 2.0 * (tokens * l.in + l.in * l.out + tokens * l.out);

    const MatmulEpilogue epi{&gb, nullptr};
    const double fwd =
        bench::time_median_ms(ctx, [&] { matmul(ctx, gx, false, gw, true, gy, 1, 0, epi); });
    bench::report(ctx, "matmul_fwd_bias", l.name + std::string("_") + shape, "ours", fwd, bytes_fwd,
                  flops);
    const RawGemm raw_fwd(ctx, false, true, tokens, l.out, l.in, CUDA_R_16BF, CUDA_R_16BF, gb.data);
    const double fwd_raw =
        bench::time_median_ms(ctx, [&] { raw_fwd.run(ctx, gx.data, gw.data, gy.data, 0); });
    bench::report(ctx, "matmul_fwd_bias", l.name + std::string("_") + shape, "cublaslt_raw",
                  fwd_raw, bytes_fwd, flops);

    const double dgrad =
        bench::time_median_ms(ctx, [&] { matmul(ctx, gy, false, gw, false, gdx); });
    bench::report(ctx, "matmul_dgrad", l.name + std::string("_") + shape, "ours", dgrad, bytes_fwd,
                  flops);
    const RawGemm raw_dgrad(ctx, false, false, tokens, l.in, l.out, CUDA_R_16BF, CUDA_R_16BF,
                            nullptr);
    const double dgrad_raw =
        bench::time_median_ms(ctx, [&] { raw_dgrad.run(ctx, gy.data, gw.data, gdx.data, 0); });
    bench::report(ctx, "matmul_dgrad", l.name + std::string("_") + shape, "cublaslt_raw", dgrad_raw,
                  bytes_fwd, flops);

    const double bytes_wgrad = 2.0 * (tokens * l.in + tokens * l.out) + 8.0 * l.in * l.out;
    const double wgrad =
        bench::time_median_ms(ctx, [&] { matmul(ctx, gy, true, gx, false, gdw, 1, 1); });
    bench::report(ctx, "matmul_wgrad", l.name + std::string("_") + shape, "ours", wgrad,
                  bytes_wgrad, flops);
    const RawGemm raw_wgrad(ctx, true, false, l.out, l.in, tokens, CUDA_R_16BF, CUDA_R_32F,
                            nullptr);
    const double wgrad_raw =
        bench::time_median_ms(ctx, [&] { raw_wgrad.run(ctx, gy.data, gx.data, gdw.data, 1); });
    bench::report(ctx, "matmul_wgrad", l.name + std::string("_") + shape, "cublaslt_raw", wgrad_raw,
                  bytes_wgrad, flops);
    arena.rewind(mark);
  }
  return 0;
}
