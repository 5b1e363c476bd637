// MaskingStage: the corruption of a micro-batch (kernels/masking.h), the head of the update
// before the stage list: it chooses N slots per sequence among the maskable tokens at the step
// scalars' masking rate and writes the generator's input (Philox kMasking, keyed by the
// micro-step). It owns the Corruption's buffers; it has no parameters and no backward.
#pragma once

#include "models/update_stage.h"

namespace electra {

struct SpecialTokens {
  int32_t pad = 0;
  int32_t cls = 101;
  int32_t sep = 102;
  int32_t mask = 103;
};

struct MaskingOptions {
  SpecialTokens tokens;
  float mask_token_prob = 0.85f;   // a chosen position becomes [MASK], else keeps its token
  float random_token_prob = 0.0f;  // ... or a random token (BERT's 0.1)
};

class MaskingStage {
 public:
  MaskingStage(ModelBuilder& b, const UpdateInputs& in, const MaskingOptions& options);

  // Views of this stage's buffers, valid until the next corrupt().
  Corruption corrupt(Context& ctx) const;

 private:
  const UpdateInputs& in_;
  MaskingOptions options_;
  Tensor generator_ids_, positions_, original_, weights_;
};

}  // namespace electra
