// UnigramStage: the replacement source `generator: unigram` (the paper's Figure 3 "unigram
// generator"): each masked slot's replacement is drawn from the unigram distribution of the
// training data's tokens (kernels/unigram_sample.h, Philox kSample as the MLM generator's
// samples). Nothing is trained: no parameters, no loss, no backward.
#pragma once

#include <vector>

#include "models/update_stage.h"

namespace electra {

class UnigramStage : public UpdateStage {
 public:
  UnigramStage(ModelBuilder& b, const UpdateInputs& in);

  // The token counts ([V], counted over the training data once per run); set before a forward.
  void set_counts(Context& ctx, const std::vector<uint64_t>& counts);
  const std::vector<uint64_t>& counts() const { return counts_; }

  // saved.samples: the corruption's when it has them, else this stage's draw.
  void forward(Context& ctx, const Corruption& c, ForwardContext& saved) override;

 private:
  const UpdateInputs& in_;
  Tensor cdf_;      // f64 [V]: the cumulative counts
  Tensor samples_;  // i32 [B * N]
  std::vector<uint64_t> counts_;
};

}  // namespace electra
