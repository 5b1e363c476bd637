#include "models/discriminator_stage.h"

#include "kernels/replace_tokens.h"

namespace electra {

DiscriminatorStage::DiscriminatorStage(ModelBuilder& b, const UpdateInputs& in,
                                       const DiscriminatorInputs& d,
                                       const DiscriminatorHeads& heads)
    : in_(in), gdes_(d.gdes), replaced_input_(d.replaced_input) {
  begin_span(b);
  model_.emplace(b, d.config, d.tables, in.batch, in.seq_len, heads);
  end_span(b);
  ids_ = b.activation(DType::I32, {in.batch, in.seq_len});
  labels_ = b.activation(DType::I32, {in.batch, in.seq_len});
}

Tensor DiscriminatorStage::forward_model(Context& ctx, const Corruption& c, const Tensor& samples,
                                         const DropoutPass& pass) {
  if (gdes_ != nullptr) gdes_->refresh(ctx);  // E_D = sg(E_G) + E_delta with this update's weights
  const Tensor* ids = &c.generator_ids;
  if (replaced_input_) {
    run_op(ctx, ReplaceTokens{.ids = in_.ids,
                              .positions = c.positions,
                              .weights = c.weights,
                              .samples = samples,
                              .replaced = Out(ids_),
                              .labels = Out(labels_)});
    ids = &ids_;
  }
  model_->forward(ctx, pass, *ids, in_.segment_ids, in_.mask, mlm_positions(c));
  if (model_->logits().data == nullptr) return Tensor{};
  return model_->logits().reshape({in_.tokens()});
}

void DiscriminatorStage::forward(Context& ctx, const Corruption& c, ForwardContext& saved) {
  forward_model(ctx, c, saved.samples, saved.pass);
  loss(ctx, c, saved);
}

void DiscriminatorStage::backward(Context& ctx, const ForwardContext& saved,
                                  const GradientsReady& ready) {
  model_->backward(ctx, saved.pass, saved.dlogits.discriminator, ready);
}

}  // namespace electra
