// AllTokensObjective: all-tokens-mlm (docs/OBJECTIVES.md): the MLM head predicts every input
// token of the replaced sequence, its softmax mixed with a copy of the input token by the binary
// head's copy logit (kernels/copy_mlm.h): a mean over the non-pad tokens (the step scalars'
// kTokenScale). The copy op rewrites the MLM head's dz and writes the copy head's.
#pragma once

#include "models/objective_mlm.h"

namespace electra {

class AllTokensObjective : public MlmObjective {
 public:
  AllTokensObjective(ModelBuilder& b, const UpdateInputs& in, const DiscriminatorInputs& d);

  // The MLM head's positions 0..T-1 in every row.
  void upload_constants(Context& ctx) override;
  void loss(Context& ctx, const Corruption& c, ForwardContext& saved) override;

 private:
  Tensor mlm_positions(const Corruption& c) const override;
  Tensor row_labels(const Corruption& c) const override;
  Tensor row_weights(const Corruption& c) const override;
  LossScale row_scale() const override { return kTokenScale; }

  Tensor positions_;  // i32 [B, T]
};

}  // namespace electra
