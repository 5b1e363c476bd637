// ElectraDiscriminator: HF's ElectraForPreTraining.
//   h = Encoder(ids)                                  [B, T, H]
//   u = h Wd^T, g = gelu(u + bd)                      (discriminator_predictions.dense)
//   z = g Wp^T + bp                                   [B * T]
//   (discriminator_predictions.dense_prediction)
// The loss op (kernels/disc_head.h) writes dz over z; backward() then reads logits() as dz.
#pragma once

#include "models/encoder.h"

namespace electra {

class ElectraDiscriminator {
 public:
  static constexpr const char* kPrefix = "discriminator/";

  ElectraDiscriminator(ModelBuilder& builder, const EncoderConfig& config,
                       const EmbeddingTables& tables, int64_t batch, int64_t seq_len);

  void forward(Context& ctx, const Pass& pass, const Tensor& ids, const Tensor& segment_ids,
               const Tensor& mask);
  const Tensor& logits() const { return logits_; }  // [B * T]; holds dz before backward()
  // `ready` (optional) receives the head's parameter span when its gradients are final, then the
  // encoder's spans (models/encoder.h).
  void backward(Context& ctx, const Pass& pass, const GradientsReady& ready = {});

  const Encoder& encoder() const { return encoder_; }
  Encoder& encoder() { return encoder_; }

 private:
  EncoderConfig config_;
  Encoder encoder_;
  ParamSpan head_span_;  // the parameters declared after the encoder
  Linear dense_, prediction_;
  Tensor pre_, act_, logits_;
  Tensor grad_act_, grad_pre_, reduce_;
};

}  // namespace electra
