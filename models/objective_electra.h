// ElectraObjective: replaced token detection (objectives electra and electra-15; Clark et al.
// 2020 section 2, docs/OBJECTIVES.md): the binary head's BCE against the labels, a mean over the
// non-pad tokens x disc_weight (the step scalars' kDiscScale; kernels/disc_head.h writes dz over
// the logits and the counts accumulate_means reads). electra-15 (masked_only) weights the
// masked positions only: the slot weights scattered to their positions (an empty slot adding
// 0), and the mean is over the masked slots (the pretrainer's normaliser plan).
#pragma once

#include "models/discriminator_stage.h"

namespace electra {

class ElectraObjective : public DiscriminatorStage {
 public:
  ElectraObjective(ModelBuilder& b, const UpdateInputs& in, const DiscriminatorInputs& d,
                   bool masked_only);

  void loss(Context& ctx, const Corruption& c, ForwardContext& saved) override;
  void mean_inputs(const Corruption& c, MeanInputs& m) const override;

  // The per-token loss [B * T] of the last loss (the adversarial rewards' source).
  const Tensor& token_loss() const { return token_loss_; }

 private:
  bool masked_only_;
  Tensor token_loss_, counts_, workspace_;
  Tensor masked_weights_;  // electra-15: f32 [B, T, 1], 1 at the masked positions
};

}  // namespace electra
