// SelfAttention: HF's ElectraAttention (self-attention + output dense + residual LayerNorm), BERT
// post-LN:
//   qkv = x [Wq; Wk; Wv]^T + [bq; bk; bv]   [B, T, 3H] (HF's query/key/value, packed)
//   c   = attention(qkv, mask)               [B, T, H]  (kernels/attention.h, with probability
//                                                       dropout)
//   a   = c Wo^T + bo
//   y   = LayerNorm(dropout(a) + x)          (ResidualLayerNorm, models/layer_norm.h)
// Saves qkv, the probabilities (with the flash kernels, only their row logsumexp, and at bf16 the
// dropout keep bits: see encoder_attention_state), c (which the flash backward reads too) in the
// encoder's stack, and the residual sum with its statistics; x is the caller's (the previous
// layer's output).
//
// The backward computes the input gradients and the LayerNorm's and bo's gradients; it leaves the
// gradients of qkv and a in the layer's slots of the encoder's stacks, from which the encoder
// adds Wqkv's, bqkv's and Wo's gradients for several layers at once (models/linear_stack.h).
#pragma once

#include <string>

#include "models/dropout_pass.h"
#include "models/encoder_scratch.h"
#include "models/encoder_stacks.h"
#include "models/layer_norm.h"
#include "models/linear.h"

namespace electra {

class SelfAttention {
 public:
  SelfAttention() = default;
  // `prefix` is "<model>/electra.encoder.layer.<i>.attention.".
  SelfAttention(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
                int64_t batch, int64_t seq_len, uint32_t probs_site, uint32_t output_site,
                EncoderScratch& scratch, const LayerStackViews& stacks);

  // x, y [B, T, H]; mask i32 [B, T] (1 = token, 0 = padding).
  void forward(Context& ctx, const DropoutPass& pass, const Tensor& x, const Tensor& mask,
               const Tensor& y);
  // dy [B, T, H] -> dx [B, T, H] (written). dy and dx must not alias. Leaves the gradients of qkv
  // and of the output projection's output in the layer's slots of the encoder's stacks.
  void backward(Context& ctx, const DropoutPass& pass, const Tensor& dy, const Tensor& dx);

  const Linear& qkv() const { return qkv_; }
  const Linear& output() const { return output_; }

 private:
  AttentionArgs args(const DropoutPass& pass) const;

  EncoderConfig config_;
  uint32_t probs_site_ = 0, output_site_ = 0;
  EncoderScratch* scratch_ = nullptr;
  Linear qkv_, output_;
  ResidualLayerNorm norm_;
  Tensor mask_;
  Tensor qkv_out_, probs_, context_;
  Tensor keep_;  // the bf16 flash forward's dropout keep bits (attention.h), else empty
  Tensor grad_qkv_, grad_output_;  // the layer's slots of the encoder's stacks
};

}  // namespace electra
