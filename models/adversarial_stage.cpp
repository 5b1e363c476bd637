#include "models/adversarial_stage.h"

#include "kernels/train_metrics.h"
#include "models/loss_gradient.h"
#include "models/metric_rows.h"

namespace electra {

AdversarialStage::AdversarialStage(ModelBuilder& b, const UpdateInputs& in,
                                   int64_t generator_hidden, const GeneratorStage& generator,
                                   const ElectraObjective& objective)
    : in_(in), generator_(generator), objective_(objective) {
  begin_span(b);
  baseline_ = Linear(b, str_cat(ElectraGenerator::kPrefix, ElectraGenerator::kAdversarialBaseline),
                     generator_hidden, 1);
  end_span(b);
  const int64_t bn = in.masked();
  const DType stat = b.dtypes().statistic;
  baseline_logit_ = b.activation({bn, 1});
  slots_ = ReinforceSlots{b.activation(stat, {bn}), b.activation(stat, {bn}),
                          b.activation(stat, {bn}), b.activation(stat, {bn})};
}

void AdversarialStage::forward(Context& ctx, const Corruption& c, ForwardContext& saved) {
  check_loss_gradient(saved.dlogits.generator, generator_.model().logits(), "adversarial_loss");
  const int64_t bn = in_.masked();
  baseline_.forward(ctx, generator_.model().masked_hidden(), baseline_logit_);
  ReinforceParams params;
  params.vocab = in_.vocab;
  params.scale = in_.normaliser(kGenScale);
  const Tensor u = baseline_logit_.reshape({bn});
  run_op(ctx, Reinforce{.dlogits = Out(saved.dlogits.generator),
                        .labels = c.original.reshape({bn}),
                        .samples = saved.samples,
                        .weights = c.weights.reshape({bn}),
                        .token_loss = objective_.token_loss(),
                        .positions = c.positions,
                        .baseline = u,
                        .params = params,
                        .baseline_grad = Out(u),
                        .out = slots_});
}

void AdversarialStage::backward(Context& ctx, const ForwardContext& /*saved*/,
                                const GradientsReady& ready) {
  baseline_.backward(ctx, generator_.model().masked_hidden(), baseline_logit_, Tensor{});
  report(ctx, ready, span());
}

void AdversarialStage::accumulate_metrics(Context& ctx, const Corruption& c,
                                          const Tensor& acc) const {
  run_op(ctx, AccumulateValueMeans{.value = slots_.reward,
                                   .loss = slots_.baseline_loss,
                                   .weights = c.weights.reshape({in_.masked()}),
                                   .rows = {.value = kMetricReward, .loss = kMetricBaselineLoss},
                                   .total = kLossTermRows,
                                   .acc = Out(acc)});
}

}  // namespace electra
