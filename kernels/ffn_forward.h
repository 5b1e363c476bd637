// ffn_forward: the whole forward of BERT's FFN block (models/feed_forward.h) in one op, for
// narrow encoders (ELECTRA-Small's generator: H = 64, F = 256), whose four launches each move
// only 2-8 MB and are bound by the launch floor:
//
//   pre = x W1^T                       [N, F]  (saved: the GELU backward reads it)
//   act = gelu(pre + b1)               [N, F]  (exact erf, kernels/gelu.h; saved for W2's gradient)
//   o   = act W2^T + b2                [N, H]
//   sum = dropout(o) + x,  y = LayerNorm(sum)  (kernels/layernorm.h residual_layernorm_forward:
//                                               saves sum, mean, rstd)
//
// The CPU reference is exactly those four ops in that order (ffn_forward_unfused: matmul,
// BiasGeluForward, linear_forward, ResidualLayerNormForward), so its bits are those of the unfused
// CPU path; it writes o into `sublayer`. The GPU kernel (kernels/ffn_forward.cu) does all of it in
// one launch and keeps o in registers: `sublayer` is the CPU's scratch and the GPU leaves it
// untouched. The GPU rounds to bf16 where the unfused GPU path stores a tensor (pre, act, o, sum,
// y), so it differs from that path only by the order of the GEMMs' f32 sums and of the LayerNorm's
// row sums.
//
// Shapes: x, sublayer, sum, y [N, H]; w1 [F, H], b1 [F]; w2 [H, F], b2 [H]; pre, act [N, F];
// gamma, beta [H]; mean, rstd [N]. Only ffn_forward_supported(H, F) shapes are accepted, on the
// CPU too (so a CPU run and its launch count take the path a GPU would take).
// Dtypes: CPU all f32 or all f64; GPU bf16 only: x, w1, w2, b2 (the compute views of a bf16 run:
// cuBLASLt's bias epilogue reads a bias of the output's type), pre, act, sum, y in bf16; b1,
// gamma, beta, mean, rstd in f32. x, w1 and w2 16-byte aligned (cp.async; the parameter store
// aligns every weight to 64 elements), pre, act, sum and y 4-byte aligned (bf16 pairs).
#pragma once

#include "kernels/dispatch.h"
#include "kernels/dropout.h"
#include "kernels/layernorm.h"

namespace electra {

// The fused kernel holds W1 and W2 whole in shared memory (2 x 32 KB at H = 64, F = 256) and a
// row's H outputs in one quad of lanes: ELECTRA-Small's generator. Wider layers (the
// discriminator) keep the cuBLASLt path, where the launch floor does not dominate.
inline bool ffn_forward_supported(int64_t h, int64_t f) {
  return h == 64 && f == 4 * h;
}

struct FfnForward {
  static constexpr const char* kName = "ffn_forward";
  In x, w1, b1, w2, b2;
  DropoutSite site;
  In gamma, beta;
  float eps = 0;
  Out pre, act, sublayer, sum, y, mean, rstd;

  void check() const {
    ELECTRA_CHECK(x.rank == 2 && w1.rank == 2, kName, ": x [N, H] and w1 [F, H] expected, got ",
                  x.str(), " and ", w1.str());
    const int64_t n = x.dim(0), h = x.dim(1), f = w1.dim(0);
    ELECTRA_CHECK(ffn_forward_supported(h, f), kName, ": H = ", h, ", F = ", f,
                  " is not supported (the fused kernel takes H = 64, F = 4 H; wider layers use "
                  "the unfused ops)");
    check_shape(w1, {f, h}, kName);
    check_shape(b1, {f}, kName);
    check_shape(w2, {h, f}, kName);
    check_shape(b2, {h}, kName);
    check_shape(pre, {n, f}, kName);
    check_shape(act, {n, f}, kName);
    // The weights and b2 are the compute copies (the activations' dtype), b1 an f32 parameter.
    check_float_dtypes(kName, {x, w1, w2, b2, pre, act}, {b1});
    check_layernorm_args(kName, x, {&sublayer, &sum, &y}, {&gamma, &beta}, {&mean, &rstd});
    check_dropout_p(site.p, kName);
    check_layernorm_eps(eps, kName);
  }
  // One kernel on the GPU (the CPU runs the four unfused ops).
  Launches launches() const { return {.kernels = x.numel() == 0 ? 0 : 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

// The four unfused ops of `op` on ctx's device, in order: FfnForward's CPU reference, and on a GPU
// the sequence the fused kernel replaces (its benchmark's baseline; it writes `sublayer`).
void ffn_forward_unfused(Context& ctx, const FfnForward& op);

}  // namespace electra
