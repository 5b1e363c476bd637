// bias + GELU (exact erf form), the FFN activation of BERT/ELECTRA.
//
// Forward:  u = x + b (b broadcast over rows), y = gelu(u) = 0.5 u (1 + erf(u / sqrt 2))
//           (evaluated as u Phi(u) with Phi(u) = 0.5 erfc(-u / sqrt 2), accurate for u << 0).
// Backward: gelu'(u) = Phi(u) + u phi(u) = 0.5 (1 + erf(u / sqrt 2)) + u exp(-u^2 / 2) / sqrt(2 pi)
//           dx = dy * gelu'(u)              (activation gradient: written, =)
//           db += sum over rows of dx       (parameter gradient: accumulated, +=)
// Shapes: x, y, dy, dx, u [N, H]; b, db [H].
// Dtypes: CPU all f32 or all f64; GPU activations (x, y, dy, dx, u) f32 or bf16 (all the same),
// b and db f32, arithmetic in f32.
// Saves nothing beyond its input x (and b). bias_gelu_backward_preact takes u = x + b directly,
// for callers that already hold it (a cuBLASLt GELU_AUX epilogue stores exactly u).
// Workspace (GPU only; the CPU ignores it): an f32 tensor of at least
// bias_gelu_backward_workspace_floats(N, H) elements holding per-row-block partial sums of db,
// reduced in a fixed order so that db is deterministic (kernels/column_sum.cuh; its tickets are
// the context's counters, engine/ticket_counters.h, so the workspace needs no zeroing).
#pragma once

#include <algorithm>

#include "kernels/dispatch.h"
#include "kernels/param_grad_rows.h"

namespace electra {

// Rows per block of the GPU forward and backward (each backward block writes one row of db
// partials).
inline int64_t bias_gelu_rows_per_block(int64_t n) {
  return param_grad_rows_per_block(n);
}
inline int64_t bias_gelu_backward_workspace_floats(int64_t n, int64_t h) {
  return (n + bias_gelu_rows_per_block(n) - 1) / bias_gelu_rows_per_block(n) * h;
}

struct BiasGeluForward {
  static constexpr const char* kName = "bias_gelu_forward";
  In x, b;
  Out y;

  void check() const {
    ELECTRA_CHECK(x.rank == 2, "bias_gelu_forward: x must be [N, H], got ", x.str());
    check_shape(b, {x.dim(1)}, "bias_gelu_forward: b");
    check_same_shape(x, y, "bias_gelu_forward: x and y");
    check_float_dtypes(kName, {x, y}, {b});
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct BiasGeluBackward {
  static constexpr const char* kName = "bias_gelu_backward";
  In dy, x, b;
  Out dx, db, workspace;

  void check() const {
    ELECTRA_CHECK(x.rank == 2, "bias_gelu_backward: x must be [N, H], got ", x.str());
    check_shape(b, {x.dim(1)}, "bias_gelu_backward: b");
    check_shape(db, {x.dim(1)}, "bias_gelu_backward: db");
    check_same_shape(x, dy, "bias_gelu_backward: x and dy");
    check_same_shape(x, dx, "bias_gelu_backward: x and dx");
    check_float_dtypes(kName, {dy, x, dx}, {b, db});
  }
  // One kernel: dx and per-block db partials, which its last blocks add (gelu.cu).
  Launches launches() const { return {.kernels = x.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct BiasGeluBackwardPreact {
  static constexpr const char* kName = "bias_gelu_backward_preact";
  In dy, u;
  Out dx, db, workspace;

  void check() const {
    ELECTRA_CHECK(u.rank == 2, "bias_gelu_backward_preact: u must be [N, H], got ", u.str());
    check_shape(db, {u.dim(1)}, "bias_gelu_backward_preact: db");
    check_same_shape(u, dy, "bias_gelu_backward_preact: u and dy");
    check_same_shape(u, dx, "bias_gelu_backward_preact: u and dx");
    check_float_dtypes(kName, {dy, u, dx}, {db});
  }
  // One kernel: dx and per-block db partials, which its last blocks add (gelu.cu).
  Launches launches() const { return {.kernels = u.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
