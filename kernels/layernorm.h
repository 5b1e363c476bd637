// layernorm over the last dim, and the post-LN residual block of BERT fused with its dropout.
//
// layernorm_forward:  mean = sum_j x_j / H, var = sum_j (x_j - mean)^2 / H (biased, as BERT),
//                     rstd = 1 / sqrt(var + eps), xhat = (x - mean) * rstd,
//                     y = xhat * gamma + beta.  Saves mean [N] and rstd [N].
// layernorm_backward: with dy_dropout (p > 0), dy is first replaced by dropout(dy) with that site:
//                     the gradient of y when the caller dropped y (dropout(layernorm(x)), the
//                     embeddings'; the mask of kernels/dropout.h, regenerated as dy is read).
//                     g = dy * gamma,
//                     dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))   (written, =)
//                     dgamma += sum over rows of dy * xhat, dbeta += sum over rows of dy.
// residual_layernorm_forward (BERT's "LayerNorm(dropout(x) + residual)"):
//                     sum = dropout(x) + residual, the dropout of kernels/dropout.h with `site`
//                     (flat index r * H + j); y = layernorm(sum). Saves sum [N, H] (in the
//                     activation dtype: the layernorm normalises the stored, rounded sum), mean
//                     and rstd; the dropout mask is regenerated in the backward, not stored.
// residual_layernorm_backward: dresidual = layernorm_backward(dy) w.r.t. sum (written, =),
//                     dx = dresidual * keep / (1 - p) (written, =), dgamma, dbeta (+=); and, when
//                     dbias is set, dbias += sum over rows of dx: the bias gradient of the linear
//                     whose output x is (BiasGrad of dx, computed as BiasGrad does on the CPU).
// Shapes: x, y, dy, dx, residual, sum, dresidual [N, H]; gamma, beta, dgamma, dbeta, dbias [H];
// mean, rstd [N]. ELECTRA uses eps = 1e-12.
// Dtypes: CPU all f32 or all f64 (statistics too); GPU activations f32 or bf16 (all the same),
// gamma, beta, dgamma, dbeta, dbias, mean and rstd f32.
// Workspace (GPU backward only; the CPU ignores it): an f32 tensor of at least
// layernorm_backward_workspace_floats(N, H) elements for per-row-block partial sums of dgamma,
// dbeta (and dbias), added in a fixed order so that they are deterministic (kernels/column_sum.cuh;
// its tickets are the context's counters, engine/ticket_counters.h, so the workspace needs no
// zeroing). The GPU backward takes H <= 5888 (3925 with dbias: its per-warp sums live in shared
// memory).
#pragma once

#include <algorithm>

#include "kernels/dispatch.h"
#include "kernels/dropout.h"
#include "kernels/param_grad_rows.h"

namespace electra {

// Rows per block of the GPU backward (each block writes one partial row).
inline int64_t layernorm_rows_per_block(int64_t n) {
  return param_grad_rows_per_block(n);
}
// A partial row per row block: dgamma, dbeta and (residual_layernorm_backward's) dbias parts.
inline int64_t layernorm_backward_workspace_floats(int64_t n, int64_t h) {
  return 3 * ((n + layernorm_rows_per_block(n) - 1) / layernorm_rows_per_block(n)) * h;
}

// The shapes shared by the four ops: x [N, H], the others [N, H], [H] (per column) or [N] (per
// row) as listed.
inline void check_layernorm_args(const char* op, const Tensor& x,
                                 std::initializer_list<const Tensor*> rows_by_h,
                                 std::initializer_list<const Tensor*> per_column,
                                 std::initializer_list<const Tensor*> per_row) {
  ELECTRA_CHECK(x.rank == 2, op, ": input must be [N, H], got ", x.str());
  // Dtypes (the top of this file): the [N, H] tensors are activations, the others parameters.
  for (const Tensor* t : rows_by_h) {
    check_same_shape(x, *t, op);
    check_float_dtypes(op, {x, *t});
  }
  for (const Tensor* t : per_column) {
    check_shape(*t, {x.dim(1)}, op);
    check_float_dtypes(op, {x}, {*t});
  }
  for (const Tensor* t : per_row) {
    check_shape(*t, {x.dim(0)}, op);
    check_float_dtypes(op, {x}, {*t});
  }
}

// Throws Error naming op unless eps > 0 (the forwards divide by sqrt(var + eps)).
inline void check_layernorm_eps(float eps, const char* op) {
  ELECTRA_CHECK(eps > 0, op, ": eps must be positive, got ", eps);
}

struct LayerNormForward {
  static constexpr const char* kName = "layernorm_forward";
  In x, gamma, beta;
  float eps = 0;
  Out y, mean, rstd;

  void check() const {
    check_layernorm_args(kName, x, {&y}, {&gamma, &beta}, {&mean, &rstd});
    check_layernorm_eps(eps, kName);
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct LayerNormBackward {
  static constexpr const char* kName = "layernorm_backward";
  In dy, x, gamma, mean, rstd;
  DropoutSite dy_dropout = {};  // optional: p = 0 (the default) reads dy as it is
  Out dx, dgamma, dbeta;
  Out workspace;

  void check() const {
    check_layernorm_args(kName, x, {&dy, &dx}, {&gamma, &dgamma, &dbeta}, {&mean, &rstd});
    check_dropout_p(dy_dropout.p, kName);
  }
  // One kernel: dx and per-block dgamma/dbeta partials, which its last blocks add (layernorm.cu).
  Launches launches() const { return {.kernels = x.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct ResidualLayerNormForward {
  static constexpr const char* kName = "residual_layernorm_forward";
  In x, residual;
  DropoutSite site;
  In gamma, beta;
  float eps = 0;
  Out sum, y, mean, rstd;

  void check() const {
    check_layernorm_args(kName, x, {&residual, &sum, &y}, {&gamma, &beta}, {&mean, &rstd});
    check_dropout_p(site.p, kName);
    check_layernorm_eps(eps, kName);
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct ResidualLayerNormBackward {
  static constexpr const char* kName = "residual_layernorm_backward";
  In dy, sum, gamma, mean, rstd;
  DropoutSite site;
  Out dx, dresidual, dgamma, dbeta;
  Out dbias = Out(Tensor{});  // optional: unset leaves the bias gradient to the caller
  Out workspace;

  void check() const {
    check_layernorm_args(kName, sum, {&dy, &dx, &dresidual}, {&gamma, &dgamma, &dbeta},
                         {&mean, &rstd});
    if (dbias.data != nullptr) check_layernorm_args(kName, sum, {}, {&dbias}, {});
    check_dropout_p(site.p, kName);
  }
  // One kernel: dx and per-block dgamma/dbeta (dbias) partials, which its last blocks add
  // (layernorm.cu).
  Launches launches() const { return {.kernels = sum.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
