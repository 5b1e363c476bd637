// FeedForward: HF's ElectraIntermediate + ElectraOutput, BERT post-LN:
//   u = x Wi^T                       [B*T, F]   (saved; the bias is added by the fused GELU)
//   g = gelu(u + bi)                 [B*T, F]   (exact erf; saved for Wo's gradient)
//   o = g Wo^T + bo                  [B*T, H]
//   y = LayerNorm(dropout(o) + x)    (saves the residual sum and its statistics)
// x is the caller's (the attention output); g lives in the encoder's stack.
//
// The backward computes the input gradient and the LayerNorm's, bo's and bi's gradients; it leaves
// the gradients of o and u in the layer's slots of the encoder's stacks, from which the encoder
// adds Wo's and Wi's gradients for several layers at once (models/linear_stack.h).
#pragma once

#include <string>

#include "models/dropout_pass.h"
#include "models/encoder_scratch.h"
#include "models/encoder_stacks.h"
#include "models/layer_norm.h"
#include "models/linear.h"

namespace electra {

class FeedForward {
 public:
  FeedForward() = default;
  // `layer_prefix` is "<model>/electra.encoder.layer.<i>.".
  FeedForward(ModelBuilder& builder, const std::string& layer_prefix, const EncoderConfig& config,
              int64_t batch, int64_t seq_len, uint32_t output_site, EncoderScratch& scratch,
              const LayerStackViews& stacks);

  void forward(Context& ctx, const DropoutPass& pass, const Tensor& x, const Tensor& y);
  // dy -> dx (written); must not alias. Leaves the gradients of o and u in the layer's slots.
  void backward(Context& ctx, const DropoutPass& pass, const Tensor& dy, const Tensor& dx);

  const Linear& intermediate() const { return intermediate_; }
  const Linear& output() const { return output_; }

 private:
  // A narrow bf16 encoder (the generator) runs the block as one op each way
  // (kernels/ffn_forward.h, kernels/ffn_backward.h). (A CPU context sees bf16 only in the launch
  // counter's dry run.)
  bool fused() const;

  EncoderConfig config_;
  uint32_t output_site_ = 0;
  EncoderScratch* scratch_ = nullptr;
  Linear intermediate_, output_;
  ResidualLayerNorm norm_;
  Tensor pre_, act_;
  Tensor grad_output_, grad_pre_;  // the layer's slots of the encoder's stacks
};

}  // namespace electra
