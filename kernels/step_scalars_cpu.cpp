#include <algorithm>

#include "kernels/step_scalars.h"

namespace electra {

void NextMicroStep::cpu(Context&) const {
  StepScalars& s = *step_scalars_of(block);
  const int64_t update = *counter.ptr<int32_t>();
  if (restart.data != nullptr && s.micro == 0) {
    std::fill_n(restart.ptr<double>(), restart.numel(), 0.0);
  }
  s.micro_step = static_cast<uint32_t>(update * plan.accumulation + plan.first + s.micro);
  s.micro = static_cast<uint32_t>((s.micro + 1) % plan.local);
  s.mask_prob = scheduled_mask_prob(plan.mask_rate, update);
}

void LossNormalisers::cpu(Context&) const {
  StepScalars& s = *step_scalars_of(block);
  double sums[2] = {0, 0};
  const float* a = first.ptr<float>();
  for (int64_t i = 0; i < first.numel(); ++i) sums[0] += a[i];
  const float* b = second.ptr<float>();
  for (int64_t i = 0; i < second.numel(); ++i) sums[1] += b[i];
  for (int k = 0; k < kLossNormalisers; ++k) {
    const LossNormaliser& n = plan[static_cast<size_t>(k)];
    const double sum = sums[n.over == LossNormaliser::Over::kSecond ? 1 : 0];
    s.normalisers[k] = static_cast<float>(static_cast<double>(s.loss_scale * n.factor) / sum);
  }
}

}  // namespace electra
