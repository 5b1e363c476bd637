// MlmObjective: the discriminator-sized model trained as a masked language model (objectives mlm
// and replace-mlm; docs/OBJECTIVES.md): an MLM head (generator_predictions) at the masked slots,
// softmax cross-entropy against the original tokens, a mean over the used slots (the step
// scalars' kGenScale; kernels/softmax_xent.h writes dz over the logits). mlm reads the masking
// op's output (BERT's corruption: no replacement source), replace-mlm the generator's samples.
// all-tokens-mlm (models/objective_all_tokens.h) is this stage over every token with a copy head.
#pragma once

#include "models/discriminator_stage.h"

namespace electra {

class MlmObjective : public DiscriminatorStage {
 public:
  MlmObjective(ModelBuilder& b, const UpdateInputs& in, const DiscriminatorInputs& d);

  void loss(Context& ctx, const Corruption& c, ForwardContext& saved) override;
  // Its MLM loss and accuracy (models/metric_rows.h kMetricMlmLoss, kMetricMlmAccuracy) and the
  // loss into the total.
  void accumulate_metrics(Context& ctx, const Corruption& c, const Tensor& acc) const override;

 protected:
  // An MLM head over `rows` positions (all-tokens-mlm: with the binary head as its copy head).
  MlmObjective(ModelBuilder& b, const UpdateInputs& in, const DiscriminatorInputs& d,
               const DiscriminatorHeads& heads);
  // The rows the head predicts: their labels (i32) and weights (f32), and the loss's mean.
  virtual Tensor row_labels(const Corruption& c) const;
  virtual Tensor row_weights(const Corruption& c) const;
  virtual LossScale row_scale() const { return kGenScale; }

  Tensor loss_, samples_, argmax_;  // [rows]: the loss op's outputs (its samples are not used)
};

}  // namespace electra
