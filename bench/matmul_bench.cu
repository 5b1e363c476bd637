// The linear layers of ELECTRA-Small, Base and Large at 16384 tokens in bf16 (f32 accumulation):
// the cases of test/kernels/matmul_cases.cpp run by bench/op_bench.cuh, forward y = x W^T + b (bias
// epilogue) and backward dx = dy W, dW += dy^T x (f32, beta 1), db += colsum(dy). Ours (the
// wrapper, plan cache included) against raw cublasLtMatmul calls with the same configuration,
// planned on their first (warm-up) call; the raw backward adds the column sums with our BiasGrad
// (cuBLASLt has no standalone one), so the difference between the rows is the GEMMs. FLOPs against
// the bf16 GEMM rate measured in the same run. Before anything is timed, the raw calls are
// validated like ours: the harness's parity run of the same layer at 128 tokens, element by
// element within the bounds of test/kernels/bf16_bounds.h.
#include <cstdio>
#include <map>
#include <memory>
#include <tuple>

#include "kernels/matmul.h"
#include "op_bench.cuh"

using namespace electra;

namespace {

// A cuBLASLt plan built by hand: row-major C[M,N] = op(A) op(B) as column-major C^T.
struct RawGemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool bias = false;

  RawGemm(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, cudaDataType_t ab,
          cudaDataType_t ct, bool with_bias)
      : bias(with_bias) {
    ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const int32_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    ELECTRA_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    ELECTRA_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    if (bias) {
      const uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
      const int32_t bias_type = ct;
      ELECTRA_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
      ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                          &bias_type, sizeof(bias_type)));
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
    if (ct != CUDA_R_32F) {  // as kernels/matmul.cu: no split-K rounding partials to bf16
      const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      ELECTRA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof(reduction)));
    }
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    ELECTRA_CUBLAS_CHECK(
        cublasLtMatmulAlgoGetHeuristic(ctx.cublaslt(), desc, a, b, c, c, pref, 1, &result, &count));
    ELECTRA_CHECK(count > 0, "raw cuBLASLt: no algorithm");
    algo = result.algo;
    cublasLtMatmulPreferenceDestroy(pref);
  }
  RawGemm(const RawGemm&) = delete;
  RawGemm& operator=(const RawGemm&) = delete;
  ~RawGemm() {
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(desc);
  }
  // The bias pointer changes with the working set's copy: set before each call (host only).
  void run(Context& ctx, const void* pa, const void* pb, void* pc, float beta,
           const void* bias_data = nullptr) const {
    if (bias) {
      ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &bias_data, sizeof(bias_data)));
    }
    const float alpha = 1;
    ELECTRA_CUBLAS_CHECK(cublasLtMatmul(ctx.cublaslt(), desc, &alpha, pb, a, pa, b, &beta, pc, c,
                                        pc, c, &algo, ctx.cublaslt_workspace(),
                                        ctx.cublaslt_workspace_bytes(), ctx.stream()));
  }
};

// The raw plans by configuration, built on first use.
const RawGemm& plan(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    cudaDataType_t ct, bool bias) {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int, bool>;
  static std::map<Key, std::unique_ptr<RawGemm>> plans;
  std::unique_ptr<RawGemm>& p = plans[Key{ta, tb, m, n, k, static_cast<int>(ct), bias}];
  if (!p) p = std::make_unique<RawGemm>(ctx, ta, tb, m, n, k, CUDA_R_16BF, ct, bias);
  return *p;
}

// y = x W^T + b: x [tokens, in], W [out, in], bias fused.
void raw_forward(Context& ctx, const test::Args& a) {
  const int64_t tokens = a["x"].dim(0), in = a["x"].dim(1), out = a["w"].dim(0);
  plan(ctx, false, true, tokens, out, in, CUDA_R_16BF, true)
      .run(ctx, a["x"].data, a["w"].data, a["y"].data, 0, a["b"].data);
}

// dx = dy W, dW += dy^T x, then our db += colsum(dy).
void raw_backward(Context& ctx, const test::Args& a) {
  const int64_t tokens = a["x"].dim(0), in = a["x"].dim(1), out = a["w"].dim(0);
  plan(ctx, false, false, tokens, in, out, CUDA_R_16BF, false)
      .run(ctx, a["dy"].data, a["w"].data, a["dx"].data, 0);
  plan(ctx, true, false, out, in, tokens, CUDA_R_32F, false)
      .run(ctx, a["dy"].data, a["x"].data, a["dw"].data, 1);
  run_op(ctx, BiasGrad{.dy = a["dy"], .db = Out(a["db"])});
}

}  // namespace

int main() {
  const std::vector<test::OpCase> cases = test::op_cases();
  for (const test::OpCase& c : cases) {
    if ((c.modes & test::kBench) == 0) continue;
    test::OpCase raw = c.bench_validation();
    raw.forward = raw_forward;
    raw.backward = raw_backward;
    const std::vector<std::string> failures = test::gpu_parity(raw, c.bench_dtype);
    for (const std::string& f : failures) {
      std::printf("FAILED validation of %s (cublaslt_raw): %s\n", raw.name().c_str(), f.c_str());
    }
    if (!failures.empty()) return 1;
    std::printf("validated %s (cublaslt_raw) against the CPU reference\n", raw.name().c_str());
  }
  return bench::run_op_benchmarks(
      cases, {{"linear", bench::Pass::kForward, "cublaslt_raw", raw_forward},
              {"linear", bench::Pass::kBackward, "cublaslt_raw", raw_backward}});
}
