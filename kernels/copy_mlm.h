// copy_mlm: the all-tokens-mlm objective's copy mechanism (Clark et al. 2020, section 3.2),
// applied after softmax_xent has taken the MLM head's loss and gradient over every token.
//
// Per row i (a token), with copy logit c (the binary head's output), D = sigmoid(c) the
// probability of copying the input token x, p = softmax of the MLM logits, y the original token:
//   q(v)    = D [v == x] + (1 - D) p(v)                   (a distribution: sums to 1)
//   loss_i  = -w log q(y)
//   r       = (1 - D) p(y) / q(y)                          (the MLM branch's share of q(y))
//   d loss / d c   = w (D - [x == y] (1 - r))
//   d loss / d z_j = r * w (p_j - [j == y])                (softmax_xent's dz, times r)
//   prediction     = argmax_v q(v): x when D + (1 - D) p(x) >= (1 - D) p(j*), else j*, with j*
//                    softmax_xent's argmax of p
// Inputs, as softmax_xent (kernels/softmax_xent.h) leaves them with the same weights and `scale`
// (a value or device memory, read once):
//   xent_loss [M] = w (lse - z_y) (= -w log p(y)), dlogits [M, Vp] = w scale (p - onehot(y)),
//   argmax [M] = j*. Outputs IN PLACE: xent_loss <- loss_i; dlogits <- r dlogits; copy_logits [M]
//   <- scale * d loss / d c; argmax <- the prediction. Rows with w == 0 get loss 0 and dc 0 (their
//   dlogits are already 0). log q is computed as logaddexp(log D, log(1 - D) + log p(y)) with
//   log D = -softplus(-c): finite for any c.
//
// Shapes: copy_logits [M] (or [M, 1]), dlogits [M, Vp], inputs, labels, argmax i32 [M], weights
// f32 [M], xent_loss [M]. Dtypes: CPU f32 or f64 (logits and loss alike); CUDA logits f32 or bf16,
// loss f32, math in f32. One thread block per row on the GPU (the row scaling); no workspace.
#pragma once

#include <cmath>

#include "engine/device_scalar.h"
#include "kernels/dispatch.h"

namespace electra {

struct CopyMlm {
  static constexpr const char* kName = "copy_mlm";
  In copy_logits, inputs, labels, weights;
  DeviceScalar<float> scale;
  Out xent_loss, dlogits, argmax;

  void check() const {
    ELECTRA_CHECK(dlogits.rank == 2, "copy_mlm: dlogits must be [M, Vp], got ", dlogits.str());
    const int64_t m = dlogits.dim(0);
    ELECTRA_CHECK(copy_logits.numel() == m, "copy_mlm: copy_logits ", copy_logits.str(), " for ", m,
                  " rows");
    ELECTRA_CHECK(copy_logits.dtype == dlogits.dtype, "copy_mlm: copy_logits ", copy_logits.str(),
                  " and dlogits ", dlogits.str(), " differ in dtype");
    check_tensor(inputs, {m}, DType::I32, "copy_mlm inputs");
    check_tensor(labels, {m}, DType::I32, "copy_mlm labels");
    check_tensor(weights, {m}, DType::F32, "copy_mlm weights");
    check_shape(xent_loss, {m}, "copy_mlm xent_loss");
    check_float_dtypes(kName, {copy_logits, dlogits}, {xent_loss});
    check_tensor(argmax, {m}, DType::I32, "copy_mlm argmax");
    ELECTRA_CHECK(scale.at != nullptr || scale.value > 0, "copy_mlm: scale ", scale.value);
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

// The per-row math of both sides, in f64 (M values per step: negligible next to the vocabulary):
// from c, log p(y) and whether x == y.
struct CopyMlmRow {
  double loss;  // -log q(y)
  double r;     // (1 - D) p(y) / q(y)
  double dc;    // D - [x == y] (1 - r)
};

ELECTRA_HD double copy_mlm_softplus(double a) {
  return fmax(a, 0.0) + log1p(exp(-fabs(a)));
}

ELECTRA_HD CopyMlmRow copy_mlm_row(double c, double log_py, bool copyable) {
  const double log_mlm = -copy_mlm_softplus(c) + log_py;  // log (1 - D) p(y)
  double log_q = log_mlm;
  if (copyable) {
    const double log_d = -copy_mlm_softplus(-c);
    const double hi = fmax(log_d, log_mlm), lo = fmin(log_d, log_mlm);
    log_q = hi + log1p(exp(lo - hi));
  }
  const double r = exp(log_mlm - log_q);
  const double d = 1.0 / (1.0 + exp(-c));
  return CopyMlmRow{-log_q, r, d - (copyable ? 1.0 - r : 0.0)};
}

// argmax_v q(v) from D, p(x), p(j*) (see the top of this file).
ELECTRA_HD int32_t copy_mlm_prediction(double c, double p_input, double p_top, int32_t input,
                                       int32_t top) {
  if (input == top) return input;
  const double d = 1.0 / (1.0 + exp(-c));
  return d + (1.0 - d) * p_input >= (1.0 - d) * p_top ? input : top;
}

}  // namespace electra
