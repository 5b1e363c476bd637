// The SIMT emulator's host cuBLASLt (test/simt, docs/ARCHITECTURE.md "The SIMT emulator"): what
// simt builds link instead of libcublasLt, with the subset the engine calls (engine/context.cpp,
// engine/cuda_check.h, engine/runtime_versions.cpp, kernels/matmul.cu).
//
// cublasLtMatmul computes, for every entry of a strided batch of column-major matrices,
//   D = alpha op(A) op(B) + beta C (+ bias[i] on row i with CUBLASLT_EPILOGUE_BIAS)
// with op N or T, A and B both f32 or both bf16, C and D of one type, f32 or bf16, the bias of D's
// type (an f32 bias with a bf16 D is NOT_SUPPORTED, as kernels/matmul.cu finds on a GPU),
// CUBLAS_COMPUTE_32F and f32 alpha and beta read from host pointers at
// the call. Every input is converted to float, the products summed in double and the result
// rounded once to D's type (to nearest even); C is not read when beta is 0. The work goes through
// simt::submit with copies of the descriptors' contents taken at the call, so it runs in stream
// order or lands in the graph being captured. The heuristic offers one algorithm (no workspace)
// for a consistent problem and NOT_SUPPORTED otherwise; the descriptors take only the attributes
// the engine sets (INVALID_VALUE for others); a preference keeps its reduction scheme mask and
// accepts and ignores every other attribute.
//
// Split-K as cuBLASLt may run it: when D is bf16, K >= 2 and the preference allows a reduction
// scheme that sums the partial products in the output's type (INPLACE or OUTPUT_TYPE; the
// default mask allows every scheme), the algorithm offered splits K in two halves and rounds after
// each: D = bf16(alpha sum_1 + beta C), then D = bf16(alpha sum_2 + D). A real GPU picks such an
// algorithm for some shapes only (the 2026-11-28 H200 run met one at 300 x 64 x 256, bf16, beta
// 1); the emulator takes it whenever it is allowed, so that a GEMM which does not forbid it is
// judged with the extra rounding on the CPU too.
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "test/simt/simt_host.h"

struct cublasLtContext {};

namespace {

struct MatmulDesc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  int32_t bias_type = -1;  // cublasLt.h's default: D's type
  const void* bias = nullptr;
};

struct Preference {
  uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;  // cublasLt.h's default: every scheme
};

// The algorithm the heuristic offers: its data[0] says whether it splits K (see the header).
constexpr uint64_t kSplitK = 1;

struct Layout {
  cudaDataType_t type;
  int64_t rows, cols, ld;
  int32_t batch = 1;
  int64_t stride = 0;  // elements between the batch's matrices
};

// A descriptor's state lives in its opaque struct's data array.
template <class State, class Opaque>
State& state(Opaque* opaque) {
  static_assert(sizeof(State) <= sizeof(opaque->data) && alignof(State) <= alignof(Opaque));
  static_assert(std::is_trivially_destructible_v<State>);
  return *std::launder(reinterpret_cast<State*>(opaque->data));
}

template <class Opaque, class State>
cublasStatus_t create(Opaque** out, const State& init) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *out = new (std::nothrow) Opaque;
  if (*out == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  new ((*out)->data) State(init);
  return CUBLAS_STATUS_SUCCESS;
}

// Reads an attribute's value, false when the buffer is absent or not of the attribute's size.
template <class T>
bool read_attribute(const void* buf, size_t size, T& value) {
  if (buf == nullptr || size != sizeof(T)) return false;
  std::memcpy(&value, buf, sizeof(T));
  return true;
}

bool f32_or_bf16(int32_t type) {
  return type == CUDA_R_32F || type == CUDA_R_16BF;
}

cudaDataType_t bias_type(const MatmulDesc& op, const Layout& d) {
  return op.bias_type == -1 ? d.type : static_cast<cudaDataType_t>(op.bias_type);
}

// op(x)'s rows and columns.
std::pair<int64_t, int64_t> op_shape(const Layout& x, cublasOperation_t op) {
  return op == CUBLAS_OP_N ? std::pair(x.rows, x.cols) : std::pair(x.cols, x.rows);
}

// One matmul's descriptor and layouts, copied at the call.
struct Problem {
  MatmulDesc op;
  Layout a, b, c, d;
};

cublasStatus_t make_problem(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                            cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                            cublasLtMatrixLayout_t d, Problem& p) {
  if (desc == nullptr || a == nullptr || b == nullptr || c == nullptr || d == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  p = {state<MatmulDesc>(desc), state<Layout>(a), state<Layout>(b), state<Layout>(c),
       state<Layout>(d)};
  for (const Layout* x : {&p.a, &p.b, &p.c, &p.d}) {
    if (x->ld < x->rows) return CUBLAS_STATUS_INVALID_VALUE;
  }
  const auto [m, k] = op_shape(p.a, p.op.trans_a);
  const auto [kb, n] = op_shape(p.b, p.op.trans_b);
  const bool supported =
      p.op.compute == CUBLAS_COMPUTE_32F && p.op.scale == CUDA_R_32F && p.a.type == p.b.type &&
      f32_or_bf16(p.a.type) && p.c.type == p.d.type && f32_or_bf16(p.d.type) && kb == k &&
      p.c.rows == m && p.c.cols == n && p.d.rows == m && p.d.cols == n && p.a.batch == p.d.batch &&
      p.b.batch == p.d.batch && p.c.batch == p.d.batch &&
      (p.op.epilogue != CUBLASLT_EPILOGUE_BIAS || bias_type(p.op, p.d) == p.d.type);
  return supported ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

float element(const void* base, cudaDataType_t type, int64_t i) {
  return type == CUDA_R_32F ? static_cast<const float*>(base)[i]
                            : __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
}

// Row-major [outer, inner] floats: out[o, i] = x[o, i] (x[i, o] when `swap`), x being entry
// `batch` of the column-major batch at `base`.
std::vector<float> gather(const void* base, const Layout& x, int64_t batch, bool swap,
                          int64_t outer, int64_t inner) {
  std::vector<float> out(static_cast<size_t>(outer * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t row = swap ? i : o, col = swap ? o : i;
      out[o * inner + i] = element(base, x.type, batch * x.stride + row + col * x.ld);
    }
  }
  return out;
}

// Whether the heuristic offers the split-K algorithm for p under `pref` (see the header).
bool splits_k(const Problem& p, const Preference& pref) {
  const uint32_t rounds_partials =
      CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
  return p.d.type == CUDA_R_16BF && op_shape(p.a, p.op.trans_a).second >= 2 &&
         (pref.reduction_mask & rounds_partials) != 0;
}

void matmul(const Problem& p, double alpha, double beta, const void* a, const void* b,
            const void* c, void* d, bool split_k) {
  const auto [m, k] = op_shape(p.a, p.op.trans_a);
  const int64_t n = p.d.cols;
  std::vector<float> bias;
  if (p.op.epilogue == CUBLASLT_EPILOGUE_BIAS) {
    for (int64_t i = 0; i < m; ++i) bias.push_back(element(p.op.bias, bias_type(p.op, p.d), i));
  }
  for (int64_t batch = 0; batch < p.d.batch; ++batch) {
    // Row i of op(A) and column j of op(B), each contiguous.
    const std::vector<float> a_rows = gather(a, p.a, batch, p.op.trans_a == CUBLAS_OP_T, m, k);
    const std::vector<float> b_cols = gather(b, p.b, batch, p.op.trans_b == CUBLAS_OP_N, n, k);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        // The halves [0, split) and [split, k); without split-K the first is all of K.
        const int64_t split = split_k ? k / 2 : k;
        auto partial = [&](int64_t from, int64_t to) {
          double sum = 0.0;
          for (int64_t l = from; l < to; ++l) {
            sum += static_cast<double>(a_rows[i * k + l]) * b_cols[j * k + l];
          }
          return alpha * sum;
        };
        double v = partial(0, split);
        if (beta != 0.0) v += beta * element(c, p.c.type, batch * p.c.stride + i + j * p.c.ld);
        // splits_k: only a bf16 D splits, its first half rounded to bf16.
        if (split_k) v = __bfloat162float(__double2bfloat16(v)) + partial(split, k);
        if (!bias.empty()) v += bias[i];
        const int64_t at = batch * p.d.stride + i + j * p.d.ld;
        if (p.d.type == CUDA_R_32F) {
          static_cast<float*>(d)[at] = static_cast<float>(v);
        } else {
          static_cast<__nv_bfloat16*>(d)[at] = __double2bfloat16(v);
        }
      }
    }
  }
}

struct StatusText {
  cublasStatus_t status;
  const char* name;
  const char* text;
};

constexpr StatusText kStatusTexts[] = {
    {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS", "the operation completed successfully"},
    {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED",
     "the library was not initialized"},
    {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"},
    {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE",
     "an invalid numeric value was used as an argument"},
    {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH",
     "an absent device architectural feature is required"},
    {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR",
     "an access to GPU memory space failed"},
    {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED",
     "the GPU program failed to execute"},
    {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"},
    {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED",
     "the functionality requested is not supported"},
    {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR",
     "an error was detected when checking the current licensing"},
};

// The entry of a status, nullptr for one cublas_api.h does not name.
const StatusText* status_text(cublasStatus_t status) {
  for (const StatusText& s : kStatusTexts) {
    if (s.status == status) return &s;
  }
  return nullptr;
}

}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *lightHandle = new (std::nothrow) cublasLtContext;
  return *lightHandle != nullptr ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) {
  return CUBLAS_VERSION;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  const StatusText* s = status_text(status);
  return s != nullptr ? s->name : "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  const StatusText* s = status_text(status);
  return s != nullptr ? s->text : "an unknown cuBLAS status";
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType) {
  return create(matmulDesc, MatmulDesc{.compute = computeType, .scale = scaleType});
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
  if (matmulDesc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  MatmulDesc& desc = state<MatmulDesc>(matmulDesc);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      int32_t op = 0;
      if (!read_attribute(buf, sizeInBytes, op) || (op != CUBLAS_OP_N && op != CUBLAS_OP_T)) {
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? desc.trans_a : desc.trans_b) =
          static_cast<cublasOperation_t>(op);
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
      uint32_t epilogue = 0;
      if (!read_attribute(buf, sizeInBytes, epilogue)) return CUBLAS_STATUS_INVALID_VALUE;
      if (epilogue != CUBLASLT_EPILOGUE_DEFAULT && epilogue != CUBLASLT_EPILOGUE_BIAS) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
      }
      desc.epilogue = static_cast<cublasLtEpilogue_t>(epilogue);
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      return read_attribute(buf, sizeInBytes, desc.bias_type) ? CUBLAS_STATUS_SUCCESS
                                                              : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return read_attribute(buf, sizeInBytes, desc.bias) ? CUBLAS_STATUS_SUCCESS
                                                         : CUBLAS_STATUS_INVALID_VALUE;
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  return create(matLayout, Layout{.type = type,
                                  .rows = static_cast<int64_t>(rows),
                                  .cols = static_cast<int64_t>(cols),
                                  .ld = ld});
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  if (matLayout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Layout& layout = state<Layout>(matLayout);
  bool read = false;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      read = read_attribute(buf, sizeInBytes, layout.batch);
      break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      read = read_attribute(buf, sizeInBytes, layout.stride);
      break;
    default:
      break;
  }
  return read ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return create(pref, Preference{});
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t sizeInBytes) {
  if (pref == nullptr || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr != CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK) return CUBLAS_STATUS_SUCCESS;
  return read_attribute(buf, sizeInBytes, state<Preference>(pref).reduction_mask)
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requestedAlgoCount < 1 || heuristicResultsArray == nullptr || returnAlgoCount == nullptr ||
      preference == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  *returnAlgoCount = 0;
  Problem problem;
  const cublasStatus_t status = make_problem(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, problem);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  heuristicResultsArray[0] = cublasLtMatmulHeuristicResult_t{};
  heuristicResultsArray[0].algo.data[0] =
      splits_k(problem, state<Preference>(preference)) ? kSplitK : 0;
  heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                              const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                              const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void*,
                              size_t, cudaStream_t stream) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Problem problem;
  const cublasStatus_t status = make_problem(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, problem);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (problem.op.epilogue == CUBLASLT_EPILOGUE_BIAS && problem.op.bias == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const double alpha_value = *static_cast<const float*>(alpha);
  const double beta_value = *static_cast<const float*>(beta);
  // Without an algorithm cuBLASLt picks one by its own heuristic, which may split.
  const bool split_k = algo != nullptr ? algo->data[0] == kSplitK : splits_k(problem, Preference{});
  // One kernel node, named as a library's kernel would be: outside namespace electra.
  simt::submit(
      stream, [=] { matmul(problem, alpha_value, beta_value, A, B, C, D, split_k); },
      cudaGraphNodeTypeKernel, "simt::cublasLtMatmul");
  return CUBLAS_STATUS_SUCCESS;
}
