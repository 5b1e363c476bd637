#include "models/masking_stage.h"

#include "kernels/masking.h"

namespace electra {

MaskingStage::MaskingStage(ModelBuilder& b, const UpdateInputs& in, const MaskingOptions& options)
    : in_(in),
      options_(options),
      generator_ids_(b.activation(DType::I32, {in.batch, in.seq_len})),
      positions_(b.activation(DType::I32, {in.batch, in.slots})),
      original_(b.activation(DType::I32, {in.batch, in.slots})),
      weights_(b.activation(DType::F32, {in.batch, in.slots})) {}

Corruption MaskingStage::corrupt(Context& ctx) const {
  MaskingParams masking;
  masking.pad_id = options_.tokens.pad;
  masking.cls_id = options_.tokens.cls;
  masking.sep_id = options_.tokens.sep;
  masking.mask_id = options_.tokens.mask;
  masking.mask_prob = DeviceScalar<float>::in(mask_prob_at(in_.scalars));
  masking.mask_token_prob = options_.mask_token_prob;
  masking.random_token_prob = options_.random_token_prob;
  masking.vocab_size = in_.vocab;
  masking.stream = in_.rng(ctx, RngPurpose::kMasking);
  run_op(ctx, MaskTokens{.ids = in_.ids,
                         .params = masking,
                         .masked_ids = Out(generator_ids_),
                         .positions = Out(positions_),
                         .original = Out(original_),
                         .weights = Out(weights_)});
  Corruption c;
  c.generator_ids = generator_ids_;
  c.positions = positions_;
  c.original = original_;
  c.weights = weights_;
  return c;
}

}  // namespace electra
