// ffn_backward: the whole backward of BERT's FFN block (models/feed_forward.h) in one op, the
// mirror of kernels/ffn_forward.h for the same narrow encoders (ELECTRA-Small's generator:
// H = 64, F = 256), whose four backward launches each move only 2-8 MB:
//
//   d           = LayerNorm backward of dy w.r.t. sum        [N, H]  (norm.dresidual: written, =)
//   grad_output = dropout backward of d (the forward's mask)  [N, H]  (norm.dx: written, =)
//   dgamma += colsum(dy * xhat), dbeta += colsum(dy), db2 += colsum(grad_output)
//                                                  (norm.dgamma, norm.dbeta, norm.dbias)
//   grad_act    = grad_output W2                              [N, F]  (GPU: in registers only)
//   grad_pre    = grad_act * gelu'(pre + b1)                  [N, F]  (written, =)
//   db1 += colsum(grad_pre)
//   dx          = d + grad_pre W1                             (norm.dresidual, added to)
//
// `norm` is the block's ResidualLayerNormBackward (models/layer_norm.h backward_op) with its
// bias gradient set: the op of the first step, run as it is on the CPU.
// The CPU reference is exactly the four unfused ops in the order models/feed_forward.cpp runs
// them on its wide path (ffn_backward_unfused: ResidualLayerNormBackward, matmul grad_output W2
// into grad_act, BiasGeluBackward, matmul grad_pre W1 accumulated into norm.dresidual), so its
// bits are those of the unfused CPU path; it writes grad_act, which is the CPU's scratch: the
// GPU leaves it untouched. grad_output and grad_pre are written because the encoder's batched
// weight gradients read them (models/linear_stack.h).
// The GPU kernel (kernels/ffn_backward.cu) rounds to bf16 where the unfused GPU path stores a
// tensor: grad_output, d (stored as dresidual there, then read by the accumulating GEMM),
// grad_act (the GEMM's bf16 output there), grad_pre, and dx = bf16(f32 GEMM sum + d) once, as
// cuBLASLt's beta = 1 epilogue does. So it differs from that path only by the order of the
// GEMMs' f32 sums, of the LayerNorm's row sums and of the column sums (all f32, fixed order:
// deterministic, no float atomics).
//
// Shapes: norm's (dy, sum, norm.dx = grad_output, norm.dresidual = dx [N, H]; gamma, dgamma,
// dbeta, dbias = db2 [H]; mean, rstd [N]); pre, grad_act, grad_pre [N, F]; w1 [F, H], b1, db1
// [F]; w2 [H, F]. Only ffn_forward_supported(H, F) shapes are accepted, on the CPU too (so a CPU
// run and its launch count take the path a GPU would take).
// Dtypes: CPU all f32 or all f64; GPU bf16 only: dy, sum, pre, w1, w2 (the compute copies of a
// bf16 run), grad_output, grad_pre, dx in bf16; gamma, mean, rstd, b1 and the parameter gradients
// in f32. w1 and w2 16-byte aligned (cp.async; the parameter store aligns every weight to 64
// elements); dy, sum, pre, grad_output, grad_pre and dx 4-byte aligned (bf16 pairs).
// Workspace (GPU only): norm.workspace, f32, at least ffn_backward_workspace_floats(N, H, F):
// the kernel's partial row [dgamma | dbeta | db2 | db1] per 64-row block, added in a fixed order
// by the launch's last blocks (kernels/column_sum.cuh; the context's ticket counters, no zeroing),
// or the partial rows of the unfused LayerNorm and bias-GELU backwards, which
// ffn_backward_unfused runs on the same tensors (the benchmark's baseline).
#pragma once

#include <algorithm>

#include "kernels/ffn_forward.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"

namespace electra {

// Rows per block of the GPU kernel (4 warps of the 16 rows of mma.sync's M).
constexpr int64_t kFfnBackwardRows = 64;

inline int64_t ffn_backward_workspace_floats(int64_t n, int64_t h, int64_t f) {
  return std::max({(n + kFfnBackwardRows - 1) / kFfnBackwardRows * (3 * h + f),
                   layernorm_backward_workspace_floats(n, h),
                   bias_gelu_backward_workspace_floats(n, f)});
}

struct FfnBackward {
  static constexpr const char* kName = "ffn_backward";
  ResidualLayerNormBackward norm;
  In pre, w1, b1, w2;
  Out grad_act, grad_pre, db1;

  void check() const {
    norm.check();
    ELECTRA_CHECK(norm.dbias.data != nullptr, kName,
                  ": norm.dbias (the output linear's bias gradient) must be set");
    ELECTRA_CHECK(w1.rank == 2, kName, ": w1 [F, H] expected, got ", w1.str());
    const int64_t n = norm.sum.dim(0), h = norm.sum.dim(1), f = w1.dim(0);
    ELECTRA_CHECK(ffn_forward_supported(h, f), kName, ": H = ", h, ", F = ", f,
                  " is not supported (the fused kernel takes H = 64, F = 4 H; wider layers use "
                  "the unfused ops)");
    check_shape(w1, {f, h}, kName);
    check_shape(b1, {f}, kName);
    check_shape(db1, {f}, kName);
    check_shape(w2, {h, f}, kName);
    check_shape(pre, {n, f}, kName);
    check_shape(grad_act, {n, f}, kName);
    check_shape(grad_pre, {n, f}, kName);
    // The weights are the compute copies (the activations' dtype), b1 an f32 parameter.
    check_float_dtypes(kName, {norm.sum, pre, w1, w2, grad_act, grad_pre}, {b1, db1});
  }
  // One kernel on the GPU (the CPU runs the four unfused ops).
  Launches launches() const { return {.kernels = norm.sum.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

// The four unfused ops of `op` on ctx's device, in order: FfnBackward's CPU reference, and on a
// GPU the sequence the fused kernel replaces (its benchmark's baseline; it writes grad_act).
void ffn_backward_unfused(Context& ctx, const FfnBackward& op);

}  // namespace electra
