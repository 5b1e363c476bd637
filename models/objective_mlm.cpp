#include "models/objective_mlm.h"

#include "kernels/softmax_xent.h"
#include "kernels/train_metrics.h"
#include "models/metric_rows.h"

namespace electra {

MlmObjective::MlmObjective(ModelBuilder& b, const UpdateInputs& in, const DiscriminatorInputs& d)
    : MlmObjective(b, in, d, DiscriminatorHeads{.binary = false, .mlm_rows = in.masked()}) {}

MlmObjective::MlmObjective(ModelBuilder& b, const UpdateInputs& in, const DiscriminatorInputs& d,
                           const DiscriminatorHeads& heads)
    : DiscriminatorStage(b, in, d, heads) {
  loss_ = b.activation(b.dtypes().statistic, {heads.mlm_rows});
  samples_ = b.activation(DType::I32, {heads.mlm_rows});
  argmax_ = b.activation(DType::I32, {heads.mlm_rows});
}

Tensor MlmObjective::row_labels(const Corruption& c) const {
  return c.original.reshape({in_.masked()});
}

Tensor MlmObjective::row_weights(const Corruption& c) const {
  return c.weights.reshape({in_.masked()});
}

void MlmObjective::loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  SoftmaxXentParams xent;
  xent.vocab = in_.vocab;
  xent.scale = in_.normaliser(row_scale());
  xent.stream = in_.rng(ctx, RngPurpose::kSample);  // its samples are not used
  // The loss writes dz over the logits: that buffer is the head's gradient.
  const Tensor& logits = model().mlm_logits();
  saved.dlogits.discriminator.mlm = logits;
  run_op(ctx, SoftmaxXent{.logits = Out(logits),
                          .labels = row_labels(c),
                          .weights = row_weights(c),
                          .params = xent,
                          .loss = Out(loss_),
                          .sample = Out(samples_),
                          .argmax = Out(argmax_)});
}

void MlmObjective::accumulate_metrics(Context& ctx, const Corruption& c, const Tensor& acc) const {
  run_op(ctx,
         AccumulateMeans{
             .loss = loss_,
             .argmax = argmax_,
             .labels = row_labels(c),
             .weights = row_weights(c),
             .counts = Tensor{},
             .means = {.mean = kMetricMlmLoss, .accuracy = kMetricMlmAccuracy, .weight = kNoRow},
             .binary = {},
             .binary_factor = 0,
             .total = kLossTermRows,
             .acc = Out(acc)});
}

}  // namespace electra
