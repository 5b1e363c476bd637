#include "models/objective_electra.h"

#include "kernels/disc_head.h"
#include "kernels/gather.h"

namespace electra {

ElectraObjective::ElectraObjective(ModelBuilder& b, const UpdateInputs& in,
                                   const DiscriminatorInputs& d, bool masked_only)
    : DiscriminatorStage(b, in, d, DiscriminatorHeads{.binary = true, .mlm_rows = 0}),
      masked_only_(masked_only) {
  const DType stat = b.dtypes().statistic;
  token_loss_ = b.activation(stat, {in.tokens()});
  counts_ = b.activation(stat, {kDiscCounts});
  workspace_ = b.activation(DType::F32, {disc_head_workspace_size(in.tokens())});
  if (masked_only) masked_weights_ = b.activation(DType::F32, {in.batch, in.seq_len, 1});
}

void ElectraObjective::loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  const int64_t bt = in_.tokens();
  const Tensor logits = model().logits().reshape({bt});
  Tensor weights = in_.token_weights;
  if (masked_only_) {
    run_op(ctx, GatherBackward{.dout = c.weights.reshape({in_.masked(), 1}),
                               .positions = c.positions,
                               .dx = Out(masked_weights_),
                               .accumulate = false});
    weights = masked_weights_.reshape({bt});
  }
  // The loss writes dz over the logits: that buffer is the binary head's gradient.
  run_op(ctx, DiscHead{.logits = logits,
                       .labels = labels().reshape({bt}),
                       .weights = weights,
                       .scale = in_.normaliser(kDiscScale),
                       .loss = Out(token_loss_),
                       .dlogits = Out(logits),
                       .counts = Out(counts_),
                       .workspace = Out(workspace_)});
  saved.dlogits.discriminator.binary = logits;
}

void ElectraObjective::mean_inputs(const Corruption& /*c*/, MeanInputs& m) const {
  m.counts = counts_;
}

}  // namespace electra
