// ElectraDiscriminator: HF's ElectraForPreTraining, the discriminator-sized model of every
// objective (models/objective.h), with the heads its objective needs:
//   h = Encoder(ids)                                  [B, T, H]
//   binary head (discriminator_predictions):
//     u = h Wd^T, g = gelu(u + bd)                    (discriminator_predictions.dense)
//     z = g Wp^T + bp                                 [B * T]
//                                                     (discriminator_predictions.dense_prediction)
//   MLM head (generator_predictions, generator_lm_head; models/mlm_head.h) at mlm positions:
//     z_mlm = MlmHead(h, positions)                   [B * N, Vp]
// backward() takes each head's dz = d loss / d z explicitly (DiscriminatorGradients;
// models/loss_gradient.h).
#pragma once

#include <optional>

#include "models/encoder.h"
#include "models/mlm_head.h"

namespace electra {

// d loss / d logits of each head the model has (the loss ops write them over the logits).
struct DiscriminatorGradients {
  Tensor binary;  // [B * T] (or [B * T, 1]): with the binary head
  Tensor mlm;     // [B * N, Vp]: with an MLM head
};

struct DiscriminatorHeads {
  bool binary = true;    // discriminator_predictions
  int64_t mlm_rows = 0;  // > 0: an MLM head over this many positions per forward (B * N)
};

class ElectraDiscriminator {
 public:
  static constexpr const char* kPrefix = "discriminator/";

  ElectraDiscriminator(ModelBuilder& builder, const EncoderConfig& config,
                       const EmbeddingTables& tables, int64_t batch, int64_t seq_len,
                       const DiscriminatorHeads& heads = {});

  // mlm_positions i32 [B, N] (the MLM head's positions; unset without an MLM head).
  void forward(Context& ctx, const DropoutPass& pass, const Tensor& ids, const Tensor& segment_ids,
               const Tensor& mask, const Tensor& mlm_positions = {});
  const Tensor& logits() const { return logits_; }  // [B * T, 1]
  // [B * N, Vp]. Only with an MLM head.
  const Tensor& mlm_logits() const {
    ELECTRA_CHECK(mlm_.has_value(), "ElectraDiscriminator: no MLM head");
    return mlm_->logits();
  }
  // From the heads' gradients (refused when one the model has is unset: its loss did not run).
  // `ready` (optional) receives the heads' parameter span when their gradients are final, then
  // the encoder's spans (models/encoder.h).
  void backward(Context& ctx, const DropoutPass& pass, const DiscriminatorGradients& dlogits,
                const GradientsReady& ready = {});

  const Encoder& encoder() const { return encoder_; }
  Encoder& encoder() { return encoder_; }

 private:
  EncoderConfig config_;
  DiscriminatorHeads heads_;
  Encoder encoder_;
  ParamSpan head_span_;  // the parameters declared after the encoder
  Linear dense_, prediction_;
  std::optional<MlmHead> mlm_;
  Tensor pre_, act_, logits_;
  Tensor grad_act_, grad_pre_, reduce_;
};

}  // namespace electra
