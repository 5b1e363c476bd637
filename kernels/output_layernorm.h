// output_layernorm: a linear layer followed by the residual LayerNorm in one op, BERT's "output"
// sublayer (HF's ElectraSelfOutput: dense, dropout, LayerNorm(dense + input)) for narrow encoders
// (ELECTRA-Small's generator: H = 64), whose two launches each move only about 2 MB and are bound
// by the launch floor:
//
//   o   = x W^T + b                        [N, H]
//   sum = dropout(o) + residual,  y = LayerNorm(sum)  (kernels/layernorm.h
//                                                     residual_layernorm_forward: saves sum, mean,
//                                                     rstd)
//
// The CPU reference is exactly those two ops in that order (output_layernorm_unfused:
// linear_forward, ResidualLayerNormForward), so its bits are those of the unfused CPU path; it
// writes o into `sublayer`. The GPU kernel (kernels/output_layernorm.cu) does all of it in one
// launch and keeps o in registers: `sublayer` is the CPU's scratch and the GPU leaves it untouched.
// The GPU rounds to bf16 where the unfused GPU path stores a tensor (o, sum, y), so it differs
// from that path only by the order of the GEMM's f32 sums and of the LayerNorm's row sums.
//
// The op takes the residual LayerNorm as the unfused path would run it (`norm`, a
// ResidualLayerNormForward: models/layer_norm.h's forward_op gives it), whose x is `sublayer`.
//
// Shapes: x [N, K]; w [H, K], b [H]; norm's tensors as ResidualLayerNormForward's ([N, H] rows).
// Only output_layernorm_supported(H, K) shapes are accepted, on the CPU too (so a CPU run and its
// launch count take the path a GPU would take).
// Dtypes: CPU all f32 or all f64; GPU bf16 only: x, w, b (the compute views of a bf16 run:
// cuBLASLt's bias epilogue reads a bias of the output's type), norm.residual, norm.sum and norm.y
// in bf16; norm.gamma, norm.beta, norm.mean, norm.rstd in f32. x, w and norm.residual 16-byte
// aligned (cp.async; the parameter store aligns every weight to 64 elements), norm.sum and norm.y
// 4-byte aligned (bf16 pairs).
#pragma once

#include "kernels/dispatch.h"
#include "kernels/dropout.h"
#include "kernels/layernorm.h"

namespace electra {

// The fused kernel holds W whole in shared memory (9 KB at H = K = 64) and a row's H outputs in
// one quad of lanes: the attention output of ELECTRA-Small's generator. Wider layers (the
// discriminator) keep the cuBLASLt path, where the launch floor does not dominate.
inline bool output_layernorm_supported(int64_t h, int64_t k) {
  return h == 64 && k == 64;
}

struct OutputLayerNormForward {
  static constexpr const char* kName = "output_layernorm";
  In x, w, b;
  // sum = dropout(sublayer) + residual, y = LayerNorm(sum), saving sum, mean and rstd; its x is
  // the [N, H] scratch o = x W^T + b is written to on the CPU (the GPU keeps o in registers).
  ResidualLayerNormForward norm;

  void check() const {
    norm.check();
    // norm.x is o's [N, H].
    const int64_t n = norm.x.dim(0), h = norm.x.dim(1);
    ELECTRA_CHECK(x.rank == 2, kName, ": x [N, K] expected, got ", x.str());
    const int64_t k = x.dim(1);
    ELECTRA_CHECK(output_layernorm_supported(h, k), kName, ": H = ", h, ", K = ", k,
                  " is not supported (the fused kernel takes H = K = 64; wider layers use the "
                  "unfused ops)");
    check_shape(x, {n, k}, kName);
    check_shape(w, {h, k}, kName);
    check_shape(b, {h}, kName);
    // w and b are the compute copies (the activations' dtype).
    check_float_dtypes(kName, {x, w, b, norm.x});
  }
  // One kernel on the GPU (the CPU runs the two unfused ops).
  Launches launches() const { return {.kernels = x.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

// The two unfused ops of `op` on ctx's device, in order: OutputLayerNormForward's CPU reference,
// and on a GPU the sequence the fused kernel replaces (its benchmark's baseline; it writes
// `sublayer`).
void output_layernorm_unfused(Context& ctx, const OutputLayerNormForward& op);

}  // namespace electra
