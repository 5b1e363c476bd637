#include "kernels/step_scalars.h"

namespace electra::cpu {}  // namespace electra::cpu

namespace electra {

void NextMicroStep::cpu(Context&) const {
  StepScalars& s = *step_scalars_of(block);
  const int64_t update = *counter.ptr<int32_t>();
  s.micro_step = static_cast<uint32_t>(update * plan.accumulation + plan.first + s.micro);
  s.micro = static_cast<uint32_t>((s.micro + 1) % plan.local);
  s.mask_prob = scheduled_mask_prob(plan.mask_rate, update);
}

void LossNormalisers::cpu(Context&) const {
  StepScalars& s = *step_scalars_of(block);
  double masked = 0, tokens = 0;
  const float* w = slot_weights.ptr<float>();
  for (int64_t i = 0; i < slot_weights.numel(); ++i) masked += w[i];
  const float* t = token_weights.ptr<float>();
  for (int64_t i = 0; i < token_weights.numel(); ++i) tokens += t[i];
  s.gen_scale = static_cast<float>(static_cast<double>(s.loss_scale) / masked);
  s.disc_scale = static_cast<float>(static_cast<double>(s.loss_scale * disc_weight) /
                                    (disc_over_slots ? masked : tokens));
  s.token_scale = static_cast<float>(static_cast<double>(s.loss_scale) / tokens);
}

}  // namespace electra
