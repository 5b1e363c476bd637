// AdversarialStage: generator_training: adversarial (Clark et al. 2020, Appendix F;
// docs/OBJECTIVES.md), after the electra objective's loss: a linear baseline on the generator's
// hidden states at the masked slots, b = -log sigmoid(w . h_G + c) (its parameters
// "generator/adversarial_baseline.*", declared after the discriminator), and the reinforce op
// (kernels/reinforce.h), which turns the generator stage's unscaled w (p - e_y) into the
// REINFORCE gradient in place, from the discriminator's per-token loss at the samples. Its
// backward is the baseline's (no gradient into the generator's encoder: a stop-gradient).
#pragma once

#include "kernels/reinforce.h"
#include "models/generator_stage.h"
#include "models/linear.h"
#include "models/objective_electra.h"

namespace electra {

class AdversarialStage : public UpdateStage {
 public:
  AdversarialStage(ModelBuilder& b, const UpdateInputs& in, int64_t generator_hidden,
                   const GeneratorStage& generator, const ElectraObjective& objective);

  void forward(Context& ctx, const Corruption& c, ForwardContext& saved) override;
  void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready) override;
  // The samples' mean reward and the baseline's loss (trained: into the total).
  void accumulate_metrics(Context& ctx, const Corruption& c, const Tensor& acc) const override;

  // The last forward's per-slot outputs [B * N] (reward, advantage, log p of the sample, baseline
  // loss).
  const ReinforceSlots& slots() const { return slots_; }

 private:
  const UpdateInputs& in_;
  const GeneratorStage& generator_;
  const ElectraObjective& objective_;
  Linear baseline_;
  Tensor baseline_logit_;  // [B * N, 1]: u, then du (reinforce, in place)
  ReinforceSlots slots_;
};

}  // namespace electra
