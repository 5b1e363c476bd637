// MlmHead: HF's ElectraForMaskedLM head, evaluated at chosen positions of an encoder's output.
//   x   = h[b, positions[b, k]]                        [B * N, H]    (kernels/gather.h)
//   u   = x Wd^T,  g = gelu(u + bd)                    [B * N, E]    (generator_predictions.dense)
//   n   = LayerNorm(g)                                 (generator_predictions.LayerNorm)
//   z   = n W_word^T + b_out                           [B * N, Vp]   (the SHARED word table, tied
//                                                       as in HF; b_out = generator_lm_head.bias)
// Vp >= V is the padded vocabulary: the word table's and the bias's padding rows
// (EmbeddingTables, ParameterStore) make the GEMM's N a multiple of 128 (tensor-core tiles). The
// padding rows are zero, so columns >= V of z are 0; the loss op ignores them (never sampled, never
// the argmax) and writes their dz as 0. The backward's GEMMs over the vocabulary read only the V
// real columns of dz (a strided view): the same sums as without padding, bit for bit on the CPU.
// backward() takes dz explicitly (models/loss_gradient.h; the loss op, kernels/softmax_xent.h,
// writes it over z in place). Gradients reach the shared word table twice: from the logits and
// the lookup.
//
// The generator is an encoder with this head at the masked positions; the MLM objectives
// (models/objective.h) put it on the discriminator-sized encoder.
#pragma once

#include <string>

#include "models/embeddings.h"
#include "models/layer_norm.h"
#include "models/linear.h"

namespace electra {

class MlmHead {
 public:
  // Parameters `prefix`generator_predictions.* and `prefix`generator_lm_head.bias for an encoder
  // of `config` (hidden H, embedding E); `rows` = B * N positions per forward.
  MlmHead(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
          const EmbeddingTables& tables, int64_t rows);

  // hidden [B, T, H] (the encoder's output); positions i32 [B, N] (views kept for the backward).
  void forward(Context& ctx, const Tensor& hidden, const Tensor& positions);
  const Tensor& logits() const { return logits_; }  // [B * N, Vp]
  // x, the encoder's output at the positions [B * N, H] (the adversarial baseline's input).
  const Tensor& gathered() const { return gathered_; }
  // From dz = d loss / d logits [B * N, Vp], adds the gradient of the hidden states to
  // grad_hidden [B, T, H] (+=); the parameter gradients are final afterwards. Refuses an unset dz.
  // grad_hidden [B, T, H] gets the gathered rows' gradients: added (accumulate), or written over
  // (every row, 0 where no position points: no zeroing before).
  // backward_own() then backward_tied().
  void backward(Context& ctx, const Tensor& dlogits, const Tensor& grad_hidden, bool accumulate);
  // All of backward() but the word table's gradient: the head's own parameters and grad_hidden.
  void backward_own(Context& ctx, const Tensor& dlogits, const Tensor& grad_hidden,
                    bool accumulate);
  // The tied word table's gradient, dW += dz^T normed (the table is shared with the other model
  // under sharing: embeddings, so its sums keep their order: models/stage_list.h).
  void backward_tied(Context& ctx, const Tensor& dlogits);
  // The head's parameters (declared contiguously by the constructor).
  const ParamSpan& span() const { return span_; }

 private:
  int64_t vocab_ = 0;
  const EmbeddingTables* tables_ = nullptr;
  ParamSpan span_;
  Linear dense_;
  LayerNorm norm_;
  Param output_bias_;  // [Vp]: generator_lm_head.bias with its padding
  Tensor positions_;
  Tensor gathered_, pre_, act_, normed_, logits_;  // saved
  Tensor grad_normed_, grad_act_, grad_pre_, grad_gathered_, reduce_;
};

}  // namespace electra
