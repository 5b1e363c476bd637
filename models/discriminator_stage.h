// DiscriminatorStage: the discriminator-sized model of every objective (models/discriminator.h,
// "the" model fine-tuning starts from) and what feeds it: with a replacement source, the
// corrupted input replace_tokens builds from the samples (the labels: 1 where a token was
// replaced); without (objective: mlm), the masking op's output. Each objective is a subclass in
// a file of its own that picks the model's heads and writes the loss and its gradients of the
// logits (models/update_stage.h lists them); adding an objective is adding one.
#pragma once

#include <optional>

#include "models/discriminator.h"
#include "models/embeddings.h"
#include "models/update_stage.h"

namespace electra {

// What every objective's stage is built from.
struct DiscriminatorInputs {
  const EncoderConfig& config;
  const EmbeddingTables& tables;
  const GdesTables* gdes = nullptr;  // sharing: gdes: the tables' sums, refreshed before a forward
  bool replaced_input = true;        // a replacement source feeds the discriminator
};

class DiscriminatorStage : public UpdateStage {
 public:
  // [the gdes sums], replace_tokens (with a replacement source: `samples` at the masked slots),
  // the encoder and the heads; returns the binary logits [B * T] (unset without the binary head).
  Tensor forward_model(Context& ctx, const Corruption& c, const Tensor& samples,
                       const DropoutPass& pass);
  // The objective's loss: its gradients of the logits into saved.dlogits.discriminator.
  virtual void loss(Context& ctx, const Corruption& c, ForwardContext& saved) = 0;

  // forward_model on saved.samples, then loss.
  void forward(Context& ctx, const Corruption& c, ForwardContext& saved) override;
  // Reports the heads, then the encoder's layers and projection (models/encoder.h).
  void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready) override;

  const ElectraDiscriminator& model() const { return *model_; }
  const Tensor& labels() const { return labels_; }     // i32 [B, T]
  const Tensor& replaced_ids() const { return ids_; }  // i32 [B, T]: replace_tokens' ids

 protected:
  DiscriminatorStage(ModelBuilder& b, const UpdateInputs& in, const DiscriminatorInputs& d,
                     const DiscriminatorHeads& heads);
  // Where the MLM head (if any) reads the encoder's output: the masked slots by default.
  virtual Tensor mlm_positions(const Corruption& c) const { return c.positions; }

  const UpdateInputs& in_;

 private:
  const GdesTables* gdes_;
  bool replaced_input_;
  std::optional<ElectraDiscriminator> model_;
  Tensor ids_, labels_;  // i32 [B, T]: replace_tokens' output
};

}  // namespace electra
