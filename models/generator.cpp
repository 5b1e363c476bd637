#include "models/generator.h"

namespace electra {

ElectraGenerator::ElectraGenerator(ModelBuilder& builder, const EncoderConfig& config,
                                   const EmbeddingTables& tables, int64_t batch, int64_t seq_len,
                                   int64_t slots, const char* tied_to)
    : tied_(tied_to != nullptr),
      encoder_(builder, str_cat(tied_ ? tied_to : kPrefix, "electra."), config, tables, batch,
               seq_len, DropoutSites{0}),
      head_(builder, kPrefix, config, tables, batch * slots) {}

void ElectraGenerator::forward(Context& ctx, const DropoutPass& pass, const Tensor& ids,
                               const Tensor& segment_ids, const Tensor& mask,
                               const Tensor& positions) {
  const ModelPart part("generator");  // engine/op_observer.h
  encoder_.forward(ctx, pass, ids, segment_ids, mask);
  head_.forward(ctx, encoder_.output(), positions);
}

void ElectraGenerator::backward_own(Context& ctx, const DropoutPass& pass, const Tensor& dlogits,
                                    const GradientsReady& ready) {
  const ModelPart part("generator");  // engine/op_observer.h
  // The head writes the whole output gradient (0 at the unmasked positions): no memset.
  head_.backward_own(ctx, dlogits, encoder_.grad_output(), /*accumulate=*/false);
  if (ready) ready(ctx, head_.span());
  encoder_.backward_layers(ctx, pass, tied_ ? GradientsReady{} : ready);
}

void ElectraGenerator::backward_tables(Context& ctx, const DropoutPass& pass,
                                       const Tensor& dlogits) {
  const ModelPart part("generator");  // engine/op_observer.h
  head_.backward_tied(ctx, dlogits);
  encoder_.backward_tables(ctx, pass);
}

}  // namespace electra
