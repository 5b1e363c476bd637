#include "models/generator_stage.h"

#include "kernels/softmax_xent.h"

namespace electra {

GeneratorStage::GeneratorStage(ModelBuilder& b, const UpdateInputs& in, const EncoderConfig& config,
                               const EmbeddingTables& tables, const GeneratorStageOptions& options)
    : in_(in), options_(options) {
  begin_span(b);
  if (options.tied_to != nullptr) b.set_reusing(true);
  model_.emplace(b, config, tables, in.batch, in.seq_len, in.slots, options.tied_to);
  b.set_reusing(false);
  end_span(b);
  loss_ = b.activation(b.dtypes().statistic, {in.masked()});
  samples_ = b.activation(DType::I32, {in.masked()});
  argmax_ = b.activation(DType::I32, {in.masked()});
}

const Tensor& GeneratorStage::forward_model(Context& ctx, const Corruption& c,
                                            const DropoutPass& pass) {
  model_->forward(ctx, pass, c.generator_ids, in_.segment_ids, in_.mask, c.positions);
  return model_->logits();
}

void GeneratorStage::loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  const int64_t bn = in_.masked();
  saved.samples = c.samples.data != nullptr ? c.samples : samples_;
  SoftmaxXentParams xent;
  xent.vocab = in_.vocab;
  xent.temperature = options_.temperature;
  xent.scale = options_.unscaled_loss ? DeviceScalar<float>(1.0f) : in_.normaliser(kGenScale);
  xent.stream = in_.rng(ctx, RngPurpose::kSample);
  // The loss writes dz over the logits: that buffer is the generator's gradient.
  const Tensor& dz = model_->logits();
  run_op(ctx, SoftmaxXent{.logits = Out(dz),
                          .labels = c.original.reshape({bn}),
                          .weights = c.weights.reshape({bn}),
                          .params = xent,
                          .loss = Out(loss_),
                          .sample = Out(samples_),
                          .argmax = Out(argmax_)});
  saved.dlogits.generator = dz;
}

void GeneratorStage::forward(Context& ctx, const Corruption& c, ForwardContext& saved) {
  forward_model(ctx, c, saved.pass);
  loss(ctx, c, saved);
}

void GeneratorStage::backward(Context& ctx, const ForwardContext& saved,
                              const GradientsReady& ready) {
  // Both parts in turn, split or not: a tied generator (no split) still runs them here.
  backward_own(ctx, saved, ready);
  backward_shared(ctx, saved, ready);
}

void GeneratorStage::backward_own(Context& ctx, const ForwardContext& saved,
                                  const GradientsReady& ready) {
  // Reports the head, then (not tied) the encoder's layers and projection.
  model_->backward_own(ctx, saved.pass, saved.dlogits.generator, ready);
}

void GeneratorStage::backward_shared(Context& ctx, const ForwardContext& saved,
                                     const GradientsReady& /*ready*/) {
  model_->backward_tables(ctx, saved.pass, saved.dlogits.generator);
}

void GeneratorStage::mean_inputs(const Corruption& c, MeanInputs& m) const {
  const int64_t bn = in_.masked();
  m.loss = loss_;
  m.argmax = argmax_;
  m.labels = c.original.reshape({bn});
  m.weights = c.weights.reshape({bn});
}

}  // namespace electra
