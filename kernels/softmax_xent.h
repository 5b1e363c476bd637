// softmax_xent: fused softmax cross-entropy over the vocabulary and a sample of softmax(x / T) from
// the same row (the generator's MLM head).
//
// Shapes: logits [M, Vs] (Vs >= V; columns >= V are padding, e.g. a vocabulary padded to a multiple
// of 128), labels [M] i32, weights [M] f32 (0 for padding rows), loss [M], sample [M] i32,
// argmax [M] i32. With x = logits[i, 0:V], w = weights[i], y = labels[i], lse = log sum_j exp x_j:
//   loss[i]      = w * (lse - x_y)                                   (0 when w == 0)
//   logits[i, j] <- w * scale * (exp(x_j - lse) - [j == y])  for j < V, 0 for j >= V  (IN PLACE)
//   sample[i]    = the smallest k < V with w_0 + ... + w_k > floor(W r / 2^32), where
//                  r = stream.bits(i) (one Philox word per row), W = w_0 + ... + w_{V-1} and
//                  w_j = sample_weight(float(x_j), m, sample_exp2_scale(T)) = floor(2^31 2^t_j),
//                  t_j = (x_j - m) log2(e) / T, m = the largest non-NaN float(x_j) (-inf if none):
//                  kernels/softmax_sample.h. Sample k comes with probability w_k / W within 2^-32:
//                  softmax(x / T)_k up to relative errors below 2^-17 (the polynomial's 2^-20 and
//                  the roundings of t_j and of log2(e) / T, |t_j| 2^-23 ln 2 for |t_j| <= 32) and
//                  the weights' truncation to multiples of 2^-31 of the largest (smaller columns
//                  are never drawn). A row with W = 0 (no finite logit) samples its argmax.
//   argmax[i]    = argmax_{j < V} x_j as the loop `if (x_j > x_top) top = j` from top = 0 finds
//                  it: ties go to the lowest index, a NaN wins only at column 0, and a row with
//                  no logit above -inf gives 0.
// Every row gets a sample and an argmax, weighted or not; rows with w == 0 get loss 0 and dlogits 0
// and their label is not read (it may be anything).
// A weighted row's label must be in [0, V): the CPU reference throws, the kernel writes a NaN loss.
//
// Dtypes: CUDA logits f32 or bf16 (dlogits written back in the same dtype), loss f32, all math in
// f32. CPU logits and loss f32 or f64. The weights are integers computed from float(x_j) with
// exactly rounded f32 operations and summed exactly, so CPU and GPU pick identical samples from
// identical logits (for bf16 logits: from the same values widened to f32), whatever order the
// kernel adds them in.
//
// No backward: dlogits are the gradient of scale * sum_i loss[i] and replace the logits. No
// workspace.
#pragma once

#include "engine/device_scalar.h"
#include "kernels/dispatch.h"

namespace electra {

struct SoftmaxXentParams {
  int64_t vocab = 0;         // V: valid columns of each row
  float temperature = 1.0f;  // T of the sample (the loss uses T = 1)
  // e.g. 1 / sum(weights) for a mean over the weighted rows; a value or device memory
  DeviceScalar<float> scale = 1.0f;
  // One word per row: usually ctx.rng(RngPurpose::kSample, step); its step may be device
  // memory.
  RngStream stream;
};

// Throws Error naming op unless logits (called `what`) is [M, V_stride] with 0 < vocab <=
// V_stride (the columns from vocab on are padding). Returns M.
inline int64_t check_padded_logits(const char* op, const char* what, const Tensor& logits,
                                   int64_t vocab) {
  ELECTRA_CHECK(logits.rank == 2, op, ": ", what, " must be [M, V_stride], got ", logits.str());
  ELECTRA_CHECK(vocab > 0 && vocab <= logits.dim(1), op, ": vocab ", vocab, " for ", what, " ",
                logits.str());
  return logits.dim(0);
}

struct SoftmaxXent {
  static constexpr const char* kName = "softmax_xent";
  Out logits;
  In labels, weights;
  SoftmaxXentParams params;
  Out loss, sample, argmax;

  void check() const {
    const int64_t m = check_padded_logits(kName, "logits", logits, params.vocab);
    ELECTRA_CHECK(params.temperature > 0, "softmax_xent: temperature ", params.temperature);
    check_tensor(labels, {m}, DType::I32, "softmax_xent labels");
    check_tensor(weights, {m}, DType::F32, "softmax_xent weights");
    check_shape(loss, {m}, "softmax_xent loss");
    check_float_dtypes(kName, {logits}, {loss});
    check_tensor(sample, {m}, DType::I32, "softmax_xent sample");
    check_tensor(argmax, {m}, DType::I32, "softmax_xent argmax");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
