// GeneratorStage: the replacement source `generator: mlm` (the paper's small MLM generator,
// models/generator.h) with its maximum-likelihood loss: softmax cross-entropy over the
// vocabulary at the masked slots, a mean over the used slots (the step scalars' kGenScale), and
// the samples of softmax(logits / masking.temperature) (Philox kSample, no gradient through them)
// that replace the masked tokens for the discriminator. The loss op writes dz over the logits; that
// buffer is handed on as ForwardContext::dlogits.generator.
// generator_training: adversarial (models/adversarial_stage.h) keeps the loss op's gradient
// unscaled, w (p - e_y), which its stage turns into the policy gradient.
#pragma once

#include <optional>

#include "models/generator.h"
#include "models/update_stage.h"

namespace electra {

struct GeneratorStageOptions {
  float temperature = 1.0f;    // of the sampling
  bool unscaled_loss = false;  // adversarial: dz = w (p - e_y), not scaled by kGenScale
  // sharing: all: the encoder is the discriminator's ("discriminator/electra.*", declared before
  // and found by a reusing builder); the stage then declares only its head.
  const char* tied_to = nullptr;
};

class GeneratorStage : public UpdateStage {
 public:
  GeneratorStage(ModelBuilder& b, const UpdateInputs& in, const EncoderConfig& config,
                 const EmbeddingTables& tables, const GeneratorStageOptions& options);

  // The model's forward on the corruption: the logits at the masked positions [B * N, Vp].
  const Tensor& forward_model(Context& ctx, const Corruption& c, const DropoutPass& pass);
  // The loss op: MLM loss, samples (saved.samples: the corruption's when it has them) and
  // saved.dlogits.generator.
  void loss(Context& ctx, const Corruption& c, ForwardContext& saved);

  void forward(Context& ctx, const Corruption& c, ForwardContext& saved) override;
  void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready) override;
  // Split (UpdateStage::splits_backward) unless the encoder is tied (sharing: all: its own part
  // would add into the discriminator's encoder): the own part is everything but the gradients of
  // the embedding tables (ElectraGenerator::backward_own), which are the shared part. It reads
  // dlogits.generator, final after the forward (the adversarial stage rewrites it there).
  bool splits_backward() const override { return options_.tied_to == nullptr; }
  void backward_own(Context& ctx, const ForwardContext& saved,
                    const GradientsReady& ready) override;
  void backward_shared(Context& ctx, const ForwardContext& saved,
                       const GradientsReady& ready) override;
  void mean_inputs(const Corruption& c, MeanInputs& m) const override;

  const ElectraGenerator& model() const { return *model_; }

 private:
  const UpdateInputs& in_;
  GeneratorStageOptions options_;
  std::optional<ElectraGenerator> model_;
  Tensor loss_, samples_, argmax_;  // [B * N] each
};

}  // namespace electra
