// FeedForward: HF's ElectraIntermediate + ElectraOutput, BERT post-LN:
//   u = x Wi^T                       [B*T, F]   (saved; the bias is added by the fused GELU)
//   g = gelu(u + bi)                 [B*T, F]   (exact erf; saved for Wo's gradient)
//   o = g Wo^T + bo                  [B*T, H]
//   y = LayerNorm(dropout(o) + x)    (saves the residual sum and its statistics)
// x is the caller's (the attention output), kept as a view.
#pragma once

#include <string>

#include "models/dropout_pass.h"
#include "models/encoder_scratch.h"
#include "models/layer_norm.h"
#include "models/linear.h"

namespace electra {

class FeedForward {
 public:
  FeedForward() = default;
  // `layer_prefix` is "<model>/electra.encoder.layer.<i>.".
  FeedForward(ModelBuilder& builder, const std::string& layer_prefix, const EncoderConfig& config,
              int64_t batch, int64_t seq_len, uint32_t output_site, EncoderScratch& scratch);

  void forward(Context& ctx, const DropoutPass& pass, const Tensor& x, const Tensor& y);
  // dy -> dx (written); must not alias.
  void backward(Context& ctx, const DropoutPass& pass, const Tensor& dy, const Tensor& dx);

 private:
  EncoderConfig config_;
  uint32_t output_site_ = 0;
  EncoderScratch* scratch_ = nullptr;
  Linear intermediate_, output_;
  ResidualLayerNorm norm_;
  Tensor x_;
  Tensor pre_, act_;
};

}  // namespace electra
