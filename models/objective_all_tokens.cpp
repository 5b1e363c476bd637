#include "models/objective_all_tokens.h"

#include "kernels/copy_mlm.h"
#include "models/host_transfer.h"

namespace electra {

AllTokensObjective::AllTokensObjective(ModelBuilder& b, const UpdateInputs& in,
                                       const DiscriminatorInputs& d)
    : MlmObjective(b, in, d, DiscriminatorHeads{.binary = true, .mlm_rows = in.tokens()}),
      positions_(b.activation(DType::I32, {in.batch, in.seq_len})) {}

void AllTokensObjective::upload_constants(Context& ctx) {
  std::vector<int32_t> iota(static_cast<size_t>(in_.tokens()));
  for (size_t i = 0; i < iota.size(); ++i) iota[i] = static_cast<int32_t>(i % in_.seq_len);
  upload_to(ctx, positions_, iota);
}

Tensor AllTokensObjective::mlm_positions(const Corruption& /*c*/) const {
  return positions_;
}

Tensor AllTokensObjective::row_labels(const Corruption& /*c*/) const {
  return in_.ids.reshape({in_.tokens()});
}

Tensor AllTokensObjective::row_weights(const Corruption& /*c*/) const {
  return in_.token_weights;
}

void AllTokensObjective::loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  MlmObjective::loss(ctx, c, saved);
  const int64_t bt = in_.tokens();
  saved.dlogits.discriminator.binary = model().logits().reshape({bt});
  run_op(ctx, CopyMlm{.copy_logits = saved.dlogits.discriminator.binary,
                      .inputs = replaced_ids().reshape({bt}),
                      .labels = row_labels(c),
                      .weights = row_weights(c),
                      .scale = in_.normaliser(row_scale()),
                      .xent_loss = Out(loss_),
                      .dlogits = Out(model().mlm_logits()),
                      .argmax = Out(argmax_)});
}

}  // namespace electra
