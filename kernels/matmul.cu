// matmul on the GPU: cuBLASLt with f32 accumulation and TF32 off (CUBLAS_COMPUTE_32F).
//
// Row-major to column-major: a row-major [r, c] matrix with leading dimension ld is the
// column-major [c, r] matrix with the same ld, so C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T: cuBLAS's first operand is our B, its second our A, with m = N, n = M.
// The bias epilogue (CUBLASLT_EPILOGUE_BIAS) adds a vector along cuBLAS's rows, i.e. along our N.
//
// GELU: cuBLASLt's GELU epilogues (GELU, GELU_AUX_BIAS) compute the tanh approximation of GELU
// (which is why XLA and PyTorch route only their approximate="tanh" GELU through them), while
// ELECTRA uses the exact erf GELU. So the GEMM writes the pre-activation (with the fused bias) to
// gelu_pre and a separate elementwise kernel computes C = pre * Phi(pre) with erff.
//
// Plans (matmul descriptor, three layouts, the heuristic's algorithm) are cached per shape, type,
// alignment and epilogue in a host-side map, so a repeated call costs a map lookup: no heuristic
// query and no device allocation. cuBLASLt's bias epilogue takes a bias of the output's type
// (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE; the exceptions are int8 and fp8 kernels), so a
// bf16 layer passes the bf16 compute copy of its bias. When the fused attempt fails for any reason
// (an f32 bias with a bf16 output, a bias not 16-byte aligned, a status other than
// NOT_SUPPORTED) the plain plan runs and the elementwise kernel adds the bias; only a failure of
// the plain plan is an error.
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>

#include "kernels/column_sum.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/matmul.h"
#include "kernels/param_grad_rows.h"

namespace electra::cuda {
namespace {

cudaDataType_t cuda_type(DType dtype, const char* what) {
  switch (dtype) {
    case DType::F32:
      return CUDA_R_32F;
    case DType::BF16:
      return CUDA_R_16BF;
    default:
      throw Error(
          str_cat("matmul (cuda): ", what, " must be f32 or bf16, got ", dtype_name(dtype)));
  }
}

char* element_ptr(const Tensor& t, int64_t offset) {
  return static_cast<char*>(t.data) + offset * static_cast<int64_t>(dtype_size(t.dtype));
}

// The largest power of two (<= 256, cuBLASLt's default assumption) dividing the matrix address,
// its row pitch and its batch stride in bytes: what the heuristic may assume about every matrix
// of the batch.
uint32_t alignment_bytes(const MatrixBatch& x, int64_t batch) {
  const int64_t size = static_cast<int64_t>(dtype_size(x.storage.dtype));
  uint64_t bits = reinterpret_cast<uintptr_t>(element_ptr(x.storage, x.offset)) |
                  static_cast<uint64_t>(x.ld * size) | 256u;
  if (batch > 1) bits |= static_cast<uint64_t>(x.stride * size);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

template <class T>
void set_layout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                const T& value) {
  ELECTRA_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, attr, &value, sizeof(value)));
}

template <class T>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
              const T& value) {
  ELECTRA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// The column-major layout of a row-major [rows, cols] batch: [cols, rows] with the same ld.
cublasLtMatrixLayout_t make_layout(cudaDataType_t type, const MatrixBatch& x, int64_t batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  ELECTRA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(x.cols),
                                                  static_cast<uint64_t>(x.rows), x.ld));
  if (batch > 1) {
    set_layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<int32_t>(batch));
    set_layout(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, x.stride);
  }
  return layout;
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // cuBLAS's A, B and C = D
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  bool fused_bias = false;

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

// The output the GEMM itself writes: C, or gelu_pre with the GELU epilogue.
MatrixBatch gemm_output(const Gemm& g) {
  if (g.epilogue.gelu_pre == nullptr) return g.c;
  MatrixBatch out = g.c;
  out.storage = *g.epilogue.gelu_pre;
  return out;
}

std::unique_ptr<Plan> build_plan(Context& ctx, const Gemm& g, bool fuse_bias) {
  auto plan = std::make_unique<Plan>();
  const cudaDataType_t ab_type = cuda_type(g.a.storage.dtype, "A and B");
  const cudaDataType_t c_type = cuda_type(g.c.storage.dtype, "C");
  const MatrixBatch out = gemm_output(g);
  ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA,
           static_cast<int32_t>(g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N));
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB,
           static_cast<int32_t>(g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N));
  if (fuse_bias) {
    set_desc(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
             static_cast<uint32_t>(CUBLASLT_EPILOGUE_BIAS));
    set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
             static_cast<int32_t>(cuda_type(g.epilogue.bias->dtype, "bias")));
    // The heuristic infers the bias alignment from this pointer; gemm() sets the call's own
    // (also 16-byte aligned: get_plan fuses only such biases) before every launch.
    set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
             static_cast<const void*>(g.epilogue.bias->data));
  }
  plan->a = make_layout(ab_type, g.b, g.batch);
  plan->b = make_layout(ab_type, g.a, g.batch);
  plan->d = make_layout(c_type, out, g.batch);

  cublasLtMatmulPreference_t pref = nullptr;
  ELECTRA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
           static_cast<uint64_t>(ctx.cublaslt_workspace_bytes()));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_bytes(g.b, g.batch));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_bytes(g.a, g.batch));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_bytes(out, g.batch));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_bytes(out, g.batch));
  // An output narrower than the f32 compute type (bf16) is rounded once: no split-K whose
  // partial sums meet in the output's type (the in-place and output-type reduction schemes round
  // each partial to bf16). The 2026-11-28 H200 run found such an extra rounding: a bf16 dX GEMM
  // accumulating into C (beta = 1) at 300 x 64 x 256 was off by u |x W| where C cancelled x W,
  // 1.5x the one-rounding bound of ffn_backward_cases.cpp. Unsplit algorithms stay allowed.
  if (c_type != CUDA_R_32F) {
    set_pref(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
             static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      ctx.cublaslt(), plan->desc, plan->a, plan->b, plan->d, plan->d, pref, 1, &result, &count);
  cublasLtMatmulPreferenceDestroy(pref);
  // A fused attempt that fails in any way falls back to the plain plan (get_plan); the plain
  // plan's NOT_SUPPORTED becomes get_plan's error naming the shape, any other status throws here.
  if (!fuse_bias && status != CUBLAS_STATUS_NOT_SUPPORTED) ELECTRA_CUBLAS_CHECK(status);
  plan->found = status == CUBLAS_STATUS_SUCCESS && count > 0;
  plan->algo = result.algo;
  plan->fused_bias = fuse_bias;
  return plan;
}

using PlanKey = std::array<int64_t, 24>;

PlanKey plan_key(Context& ctx, const Gemm& g, bool fuse_bias) {
  const MatrixBatch out = gemm_output(g);
  return PlanKey{ctx.device_index(),
                 g.trans_a,
                 g.trans_b,
                 g.m(),
                 g.n(),
                 g.k(),
                 g.a.ld,
                 g.b.ld,
                 out.ld,
                 g.batch,
                 g.batch > 1 ? g.a.stride : 0,
                 g.batch > 1 ? g.b.stride : 0,
                 g.batch > 1 ? out.stride : 0,
                 static_cast<int64_t>(g.a.storage.dtype),
                 static_cast<int64_t>(g.c.storage.dtype),
                 fuse_bias,
                 fuse_bias ? static_cast<int64_t>(g.epilogue.bias->dtype) : -1,
                 alignment_bytes(g.a, g.batch),
                 alignment_bytes(g.b, g.batch),
                 alignment_bytes(out, g.batch),
                 static_cast<int64_t>(ctx.cublaslt_workspace_bytes()),
                 g.a.rows,
                 g.b.rows,
                 out.rows};
}

std::mutex& plan_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<PlanKey, std::unique_ptr<Plan>>& plan_cache() {
  static std::map<PlanKey, std::unique_ptr<Plan>> cache;
  return cache;
}

const Plan& cached_plan(Context& ctx, const Gemm& g, bool fuse_bias) {
  auto& cache = plan_cache();
  const PlanKey key = plan_key(ctx, g, fuse_bias);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, build_plan(ctx, g, fuse_bias)).first;
  return *it->second;
}

// The plan for g; with a bias, the fused-epilogue plan when cuBLASLt has one, else a plain one.
// Call with plan_mutex() held.
const Plan& get_plan(Context& ctx, const Gemm& g) {
  if (g.epilogue.bias != nullptr && is_aligned16(g.epilogue.bias->data)) {
    const Plan& fused = cached_plan(ctx, g, true);
    if (fused.found) return fused;
  }
  const Plan& plain = cached_plan(ctx, g, false);
  ELECTRA_CHECK(plain.found, "matmul (cuda): cuBLASLt has no algorithm for M=", g.m(), " N=", g.n(),
                " K=", g.k(), " batch ", g.batch, ", A ", g.a.storage.str(), ", B ",
                g.b.storage.str(), ", C ", g.c.storage.str());
  return plain;
}

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

// The unfused part of the epilogue, elementwise over the [rows, n] output `pre`:
//   pre += bias (when bias), then y = gelu(pre) (when y). Bias-only runs in place on C.
// 2-D indexing (no per-element integer division): threadIdx.x and blockIdx.x pick the column,
// threadIdx.y and blockIdx.y the row, with a grid-stride loop over rows past 65535 row blocks.
constexpr int kEpilogueCols = 32, kEpilogueRows = 8;

template <class TC, class TB>
__global__ void bias_gelu_kernel(TC* pre, TC* y, const TB* bias, int64_t rows, int64_t n) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(kEpilogueCols) + threadIdx.x;
  if (col >= n) return;
  const float b = bias != nullptr ? to_float(bias[col]) : 0.0f;
  for (int64_t r = blockIdx.y * static_cast<int64_t>(kEpilogueRows) + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.y) * kEpilogueRows) {
    const int64_t i = r * n + col;
    float v = to_float(pre[i]);
    if (bias != nullptr) {
      v = to_float(from_float<TC>(v + b));
      pre[i] = from_float<TC>(v);
    }
    if (y != nullptr) y[i] = from_float<TC>(gelu(v));
  }
}

template <class TC, class TB>
void launch_bias_gelu(Context& ctx, void* pre, void* y, const void* bias, int64_t total,
                      int64_t n) {
  const int64_t rows = total / n;
  const dim3 grid(static_cast<unsigned>(ceil_div(n, kEpilogueCols)),
                  static_cast<unsigned>(std::min<int64_t>(ceil_div(rows, kEpilogueRows), 65535)));
  bias_gelu_kernel<TC, TB><<<grid, dim3(kEpilogueCols, kEpilogueRows), 0, ctx.stream()>>>(
      static_cast<TC*>(pre), static_cast<TC*>(y), static_cast<const TB*>(bias), rows, n);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class TC>
void epilogue_kernel(Context& ctx, const Tensor& pre, const Tensor* y, const Tensor* bias,
                     int64_t n) {
  void* y_data = y != nullptr ? y->data : nullptr;
  if (bias != nullptr && bias->dtype == DType::F32) {
    launch_bias_gelu<TC, float>(ctx, pre.data, y_data, bias->data, pre.numel(), n);
  } else if (bias != nullptr) {
    launch_bias_gelu<TC, __nv_bfloat16>(ctx, pre.data, y_data, bias->data, pre.numel(), n);
  } else {
    launch_bias_gelu<TC, float>(ctx, pre.data, y_data, nullptr, pre.numel(), n);
  }
}

// db += colsum(dy) in one launch. Block (x, p) sums rows [p R, (p + 1) R) of its columns in a
// fixed tree into partial[p, c], then the blocks that arrive last add the partial rows of the
// column tile x into db (kernels/column_sum.cuh). Block z works on group z alone: its matrix of
// dy, its sums in db, its own partial rows and counters (those of one launch without groups).
template <class T>
__global__ void bias_grad_kernel(const T* dy, ColumnTickets tickets, float* db, int64_t m,
                                 int64_t n, int64_t rows, int64_t db_stride, int64_t tiles) {
  __shared__ float scratch[kColumnSumThreads];
  dy += blockIdx.z * m * n;
  db += blockIdx.z * db_stride;
  tickets.partial += blockIdx.z * tickets.count * tickets.width;
  tickets.counters += blockIdx.z * tiles * (tickets.lanes + 1);
  const int64_t c0 = blockIdx.x * static_cast<int64_t>(blockDim.x), col = c0 + threadIdx.x;
  const int64_t r0 = blockIdx.y * rows, r1 = std::min<int64_t>(m, r0 + rows);
  const float total = block_column_sum(dy, n, r0, r1, col, col < n, scratch);
  if (threadIdx.y == 0 && col < n) tickets.partial[blockIdx.y * n + col] = total;
  finish_column_tile(tickets, blockIdx.y, blockIdx.x, c0, std::min<int64_t>(n, c0 + blockDim.x),
                     [&](int64_t c, float sum) { db[c] += sum; });
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void Gemm::cuda(Context& ctx) const {
  const Gemm& g = *this;
  if (g.m() == 0 || g.n() == 0) return;  // nothing to launch
  const MatmulEpilogue& e = g.epilogue;
  if (e.bias != nullptr) {
    ELECTRA_CHECK(e.bias->dtype == DType::F32 || e.bias->dtype == g.c.storage.dtype,
                  "matmul (cuda): bias ", e.bias->str(), " must be f32 or C's dtype (",
                  g.c.storage.str(), ")");
  }
  const MatrixBatch out = cuda::gemm_output(g);
  bool fused_bias = false;
  {
    std::lock_guard<std::mutex> lock(cuda::plan_mutex());
    const cuda::Plan& plan = cuda::get_plan(ctx, g);
    fused_bias = plan.fused_bias;
    if (fused_bias) cuda::set_desc(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias->data);
    void* d = cuda::element_ptr(out.storage, out.offset);
    ELECTRA_CUBLAS_CHECK(cublasLtMatmul(
        ctx.cublaslt(), plan.desc, &g.alpha, cuda::element_ptr(g.b.storage, g.b.offset), plan.a,
        cuda::element_ptr(g.a.storage, g.a.offset), plan.b, &g.beta, d, plan.d, d, plan.d,
        &plan.algo, ctx.cublaslt_workspace(), ctx.cublaslt_workspace_bytes(), ctx.stream()));
  }
  const Tensor* bias = fused_bias ? nullptr : e.bias;
  if (bias == nullptr && e.gelu_pre == nullptr) return;
  const Tensor* y = e.gelu_pre != nullptr ? &g.c.storage : nullptr;
  if (g.c.storage.dtype == DType::F32) {
    cuda::epilogue_kernel<float>(ctx, out.storage, y, bias, g.n());
  } else {
    cuda::epilogue_kernel<__nv_bfloat16>(ctx, out.storage, y, bias, g.n());
  }
}

// db += colsum(dy) in one deterministic launch: at most 512 row blocks (param_grad_rows_per_block)
// write partial column sums, which the last blocks of each column tile add in a fixed order
// (kernels/column_sum.cuh). The partials live in the context's cuBLASLt workspace: only the GEMMs
// use it otherwise, and they run on the same stream, so stream order keeps the two apart (no
// allocation, no extra workspace argument); the tickets are the context's counters. Groups take
// grid.z, each with the partial rows and counters of an ungrouped launch, so a group's order is
// that of one BiasGrad of its matrix as long as the workspace holds groups x those partial rows
// (ELECTRA-Small's QKV bias: 12 x 512 rows of 768 columns, 19 MB of 32); beyond, every group
// takes longer row blocks (another order, still fixed by the shapes).
void BiasGrad::cuda(Context& ctx) const {
  check_dtype(db, DType::F32, "bias_grad (cuda): db");
  if (dy.numel() == 0) return;  // db += an empty sum
  const int64_t n = this->n(), m = dy.numel() / n / groups;
  const int64_t capacity =
      static_cast<int64_t>(ctx.cublaslt_workspace_bytes() / sizeof(float)) / (n * groups);
  ELECTRA_CHECK(capacity >= 1, "bias_grad (cuda): ", groups, " x ", n,
                " columns exceed the partial-sum space");
  int64_t rows = param_grad_rows_per_block(m);
  if (cuda::ceil_div(m, rows) > capacity) rows = cuda::ceil_div(m, capacity);
  const int64_t partials = cuda::ceil_div(m, rows);
  const int cols = cuda::column_sum_cols(n);
  const int64_t tiles = cuda::ceil_div(n, cols);
  // Checked for every group's counters: the kernel offsets the partials and counters per group.
  const cuda::ColumnTickets tickets = cuda::column_tickets(
      ctx, static_cast<float*>(ctx.cublaslt_workspace()), partials, n, n, tiles * groups);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(partials),
                  static_cast<unsigned>(groups));
  const dim3 block(cols, cuda::kColumnSumThreads / cols);
  if (dy.dtype == DType::F32) {
    cuda::bias_grad_kernel<<<grid, block, 0, ctx.stream()>>>(
        dy.ptr<float>(), tickets, db.ptr<float>(), m, n, rows, db_stride, tiles);
  } else {
    check_dtype(dy, DType::BF16, "bias_grad (cuda): dy");
    cuda::bias_grad_kernel<<<grid, block, 0, ctx.stream()>>>(
        static_cast<const __nv_bfloat16*>(dy.data), tickets, db.ptr<float>(), m, n, rows, db_stride,
        tiles);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
