// matmul: the one wrapper every matmul in the engine goes through (cuBLASLt on the GPU, Eigen on
// the CPU). Row-major semantics throughout:
//
//   C[M,N] = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T,   op(A) [M,K], op(B) [K,N]
//
// then an optional epilogue:
//   bias      C += bias[N] on every row
//   GELU      pre = alpha * op(A) op(B) (+ bias) is written to `gelu_pre` (same shape and dtype
//             as C; the GELU backward needs it) and C = gelu(pre) = pre * Phi(pre), exact erf.
//             Requires beta == 0 (C is write-only then).
// With beta == 0, C is never read (it may hold NaN).
//
// Two forms: matmul() views rank >= 2 tensors as matrices [numel / last dim, last dim] (so
// x[B,T,H] is a [B*T, H] matrix), and matmul_batched() takes explicit strided batches of
// matrices inside a tensor's storage (attention: one head of packed qkv is a [T, d] matrix with
// leading dimension 3H). BiasGrad is the deterministic db[N] += sum over rows of dY[M,N].
//
// Linear y = x W^T + b with W [out, in] (HF layout), x [rows, in]:
//   forward    matmul(ctx, x, false, W, true, y, 1, 0, {.bias = &b})
//   backward   matmul(ctx, dy, false, W, false, dx)            dx  = dy W      (written)
//              matmul(ctx, dy, true, x, false, dW, 1, 1)       dW += dy^T x    (accumulated)
//              run_op(ctx, BiasGrad{dy, Out(db)})           db += colsum(dy)
// linear_forward / linear_backward below are exactly these calls.
//
// Dtypes: CPU, every tensor f32 or every tensor f64. CUDA: A and B both f32 or both bf16; C f32
// or bf16; bias f32 or C's dtype; gelu_pre C's dtype; accumulation in f32 with TF32 off
// (CUBLAS_COMPUTE_32F), so f32 results match the CPU to rounding.
// Workspace: none from the caller; cuBLASLt uses the context's workspace, and the CUDA BiasGrad
// borrows it for its partial column sums (stream-ordered with the GEMMs) and takes the context's
// ticket counters (engine/ticket_counters.h) to add them in the same launch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/dispatch.h"

namespace electra {

// A batch of row-major matrices inside a tensor's storage: matrix i, row r, column c is element
// offset + i * stride + r * ld + c of `storage` (flat, in elements).
struct MatrixBatch {
  Tensor storage;
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
  int64_t stride = 0;
};

// t (rank >= 1) as one contiguous [numel / last dim, last dim] matrix.
inline MatrixBatch as_matrix(const Tensor& t) {
  ELECTRA_CHECK(t.rank >= 1, "matmul: a matrix needs rank >= 1, got ", t.str());
  const int64_t cols = t.dim(-1);
  const int64_t rows = cols == 0 ? 0 : t.numel() / cols;
  return MatrixBatch{t, 0, rows, cols, cols, rows * cols};
}

struct MatmulEpilogue {
  const Tensor* bias = nullptr;      // [N]
  const Tensor* gelu_pre = nullptr;  // C's shape and dtype; selects the GELU epilogue
};

// Everything one GEMM call needs, validated (see check_gemm below).
struct Gemm {
  static constexpr const char* kName = "matmul";
  MatrixBatch a, b, c;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1;
  float alpha = 1, beta = 0;
  MatmulEpilogue epilogue;

  int64_t m() const { return trans_a ? a.cols : a.rows; }
  int64_t k() const { return trans_a ? a.rows : a.cols; }
  int64_t n() const { return trans_b ? b.rows : b.cols; }

  // One cuBLASLt call, then the epilogue kernel for GELU or a bias cuBLASLt does not fuse. A bias
  // is fused when it is 16-byte aligned, of C's dtype (cuBLASLt's bias epilogue takes no other)
  // and cuBLASLt has an algorithm with the bias epilogue (matmul.cu, get_plan); declared fused
  // whenever the first two hold, which launch_count_gpu_test and every op case's parity run
  // check against the plans of the GPU they run on.
  Launches launches() const {
    if (m() == 0 || n() == 0) return {};
    const bool has_bias = epilogue.bias != nullptr;
    const bool fused = has_bias && reinterpret_cast<uintptr_t>(epilogue.bias->data) % 16 == 0 &&
                       epilogue.bias->dtype == c.storage.dtype;
    const bool kernel = epilogue.gelu_pre != nullptr || (has_bias && !fused);
    return {.kernels = kernel ? 1 : 0, .library_calls = 1};
  }
  double flops() const {
    return 2.0 * static_cast<double>(m()) * static_cast<double>(n()) * static_cast<double>(k()) *
           static_cast<double>(batch);
  }
  // A and B read once, C written (and read when beta != 0); the epilogue kernel, when there is
  // one, reads the GEMM's output and writes C once more.
  double bytes() const {
    const double ab = static_cast<double>(dtype_size(a.storage.dtype)) * static_cast<double>(k()) *
                      static_cast<double>(m() + n());
    const double mn = static_cast<double>(dtype_size(c.storage.dtype)) * static_cast<double>(m()) *
                      static_cast<double>(n());
    const double passes = (beta != 0 ? 2 : 1) + (launches().kernels > 0 ? 2 : 0);
    return static_cast<double>(batch) * (ab + passes * mn);
  }
  // "MxNxK", the batch, which operand is transposed, and the epilogue: "256x16384x1024 NT +bias".
  std::string label() const {
    return str_cat(m(), "x", n(), "x", k(), batch > 1 ? str_cat(" x", batch) : std::string(), " ",
                   trans_a ? "T" : "N", trans_b ? "T" : "N",
                   epilogue.bias != nullptr ? " +bias" : "",
                   epilogue.gelu_pre != nullptr ? " +gelu" : "", beta != 0 ? " +=" : "");
  }

  void check(const Context& ctx) const;  // below: detail::check_gemm
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

// db[N] += sum over the rows of dy (rank >= 2, [M, N] as in as_matrix). Deterministic. CPU: dy
// and db both f32 or f64; CUDA: dy f32 or bf16, db f32.
// Groups (the QKV bias gradients of an encoder's layers in one launch, models/linear_stack.h):
// with groups = G, dy is G stacked [M, N] matrices ([G * M, N]) and the sums of matrix g go to
// db[g * db_stride + c]; db spans (G - 1) * db_stride + N elements (the layers' biases at the
// layers' parameter stride). Each group's sums are added in the order of one BiasGrad of its own,
// on the CPU and the GPU alike, so a grouped call gives the bits of G separate calls.
struct BiasGrad {
  static constexpr const char* kName = "bias_grad";
  In dy;
  Out db;
  int64_t groups = 1;
  int64_t db_stride = 0;  // elements between the groups' sums in db (groups > 1)

  int64_t n() const { return dy.rank >= 1 ? dy.dim(-1) : 0; }
  void check() const {
    ELECTRA_CHECK(
        groups >= 1 && dy.rank >= 1 && (dy.numel() / std::max<int64_t>(n(), 1)) % groups == 0,
        "bias_grad: dy ", dy.str(), " is not ", groups, " stacked matrices");
    ELECTRA_CHECK(groups == 1 ? db.numel() == n()
                              : db_stride >= n() && db.numel() == (groups - 1) * db_stride + n(),
                  "bias_grad: dy ", dy.str(), " in ", groups, " groups, db ", db.str(),
                  " at stride ", db_stride);
    check_float_dtypes(kName, {dy}, {db});
  }
  // Per-block partial column sums, added by the last blocks of the same launch (matmul.cu).
  Launches launches() const { return {.kernels = dy.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

namespace detail {

inline void check_in_bounds(const MatrixBatch& x, int64_t batch, const char* name) {
  ELECTRA_CHECK(
      x.offset >= 0 && x.rows >= 0 && x.cols >= 0 && x.ld >= x.cols && x.ld >= 1 && x.stride >= 0,
      "matmul: ", name, " has a bad layout (offset ", x.offset, ", ", x.rows, "x", x.cols, ", ld ",
      x.ld, ", stride ", x.stride, ") in ", x.storage.str());
  if (x.rows == 0 || x.cols == 0 || batch == 0) return;
  const int64_t last = x.offset + (batch - 1) * x.stride + (x.rows - 1) * x.ld + x.cols;
  ELECTRA_CHECK(last <= x.storage.numel(), "matmul: ", name, " (", batch, " x ", x.rows, "x",
                x.cols, ", ld ", x.ld, ", stride ", x.stride, ", offset ", x.offset,
                ") reaches element ", last, " of ", x.storage.str());
}

inline void check_gemm(const Context& ctx, const Gemm& g) {
  ELECTRA_CHECK(g.batch >= 1, "matmul: batch ", g.batch);
  ELECTRA_CHECK(g.k() >= 1, "matmul: inner dimension K = ", g.k(), " (", g.a.storage.str(), ")");
  check_in_bounds(g.a, g.batch, "A");
  check_in_bounds(g.b, g.batch, "B");
  check_in_bounds(g.c, g.batch, "C");
  const int64_t kb = g.trans_b ? g.b.cols : g.b.rows;
  ELECTRA_CHECK(g.k() == kb, "matmul: op(A) is ", g.m(), "x", g.k(), " (", g.a.storage.str(),
                g.trans_a ? ", transposed" : "", ") but op(B) is ", kb, "x", g.n(), " (",
                g.b.storage.str(), g.trans_b ? ", transposed" : "", ")");
  ELECTRA_CHECK(g.c.rows == g.m() && g.c.cols == g.n(), "matmul: C is ", g.c.rows, "x", g.c.cols,
                " (", g.c.storage.str(), "), op(A) op(B) is ", g.m(), "x", g.n());
  // Dtypes (the top of this file).
  const DType ab = g.a.storage.dtype, cd = g.c.storage.dtype;
  ELECTRA_CHECK(ab == g.b.storage.dtype, "matmul: A is ", g.a.storage.str(), ", B is ",
                g.b.storage.str());
  // f64 is all-f64 and the CPU's; otherwise A, B and C are f32 or bf16 (the GPU's mixes; a CPU
  // context sees bf16 only in a dry run, and its cpu() computes all-f32).
  auto low = [](DType d) { return d == DType::F32 || d == DType::BF16; };
  ELECTRA_CHECK(ab == DType::F64 ? cd == DType::F64 && !ctx.is_cuda() : low(ab) && low(cd),
                "matmul", ctx.is_cuda() ? " (cuda)" : "", ": A and B ", g.a.storage.str(), ", C ",
                g.c.storage.str());
  const MatmulEpilogue& e = g.epilogue;
  if (e.bias != nullptr) {
    check_devices(ctx, "matmul", {e.bias});
    ELECTRA_CHECK(e.bias->numel() == g.n(), "matmul: bias ", e.bias->str(), " for N = ", g.n());
    ELECTRA_CHECK(e.bias->dtype == cd || (e.bias->dtype == DType::F32 && cd != DType::F64),
                  "matmul: bias ", e.bias->str(), " for C ", g.c.storage.str());
  }
  if (e.gelu_pre != nullptr) {
    check_devices(ctx, "matmul", {e.gelu_pre});
    check_same_shape(*e.gelu_pre, g.c.storage, "matmul: gelu_pre vs C");
    check_dtype(*e.gelu_pre, g.c.storage.dtype, "matmul: gelu_pre");
    ELECTRA_CHECK(g.beta == 0, "matmul: the GELU epilogue needs beta == 0, got ", g.beta);
  }
  ELECTRA_CHECK((e.bias == nullptr && e.gelu_pre == nullptr) ||
                    (g.batch == 1 && g.c.offset == 0 && g.c.ld == g.c.cols &&
                     g.c.rows * g.c.cols == g.c.storage.numel()),
                "matmul: epilogues need one whole contiguous C, got ", g.c.storage.str());
}

}  // namespace detail

inline void Gemm::check(const Context& ctx) const {
  detail::check_gemm(ctx, *this);
}

// C = alpha op(A) op(B) + beta C (+ epilogue); A, B, C rank >= 2, viewed with as_matrix.
inline void matmul(Context& ctx, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                   const Tensor& c, float alpha = 1, float beta = 0,
                   const MatmulEpilogue& epilogue = {}) {
  ELECTRA_CHECK(a.rank >= 2 && b.rank >= 2 && c.rank >= 2, "matmul: rank >= 2 needed, got A ",
                a.str(), ", B ", b.str(), ", C ", c.str());
  run_op(ctx, Gemm{.a = as_matrix(a),
                   .b = as_matrix(b),
                   .c = as_matrix(c),
                   .trans_a = trans_a,
                   .trans_b = trans_b,
                   .batch = 1,
                   .alpha = alpha,
                   .beta = beta,
                   .epilogue = epilogue});
}

// For i < batch: C_i = alpha op(A_i) op(B_i) + beta C_i. No epilogue.
inline void matmul_batched(Context& ctx, const MatrixBatch& a, bool trans_a, const MatrixBatch& b,
                           bool trans_b, const MatrixBatch& c, int64_t batch, float alpha = 1,
                           float beta = 0) {
  run_op(ctx, Gemm{.a = a,
                   .b = b,
                   .c = c,
                   .trans_a = trans_a,
                   .trans_b = trans_b,
                   .batch = batch,
                   .alpha = alpha,
                   .beta = beta,
                   .epilogue = {}});
}

// y = x W^T + b: x [..., in], W [out, in], b [out], y [..., out].
inline void linear_forward(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                           const Tensor& y) {
  matmul(ctx, x, false, w, true, y, 1, 0, MatmulEpilogue{&b, nullptr});
}

// dx = dy W (written); dW += dy^T x and db += colsum(dy) (accumulated).
inline void linear_backward(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& dy,
                            const Tensor& dx, const Tensor& dw, const Tensor& db) {
  matmul(ctx, dy, false, w, false, dx);
  matmul(ctx, dy, true, x, false, dw, 1, 1);
  run_op(ctx, BiasGrad{.dy = dy, .db = Out(db)});
}

}  // namespace electra
