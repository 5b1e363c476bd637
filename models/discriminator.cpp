#include "models/discriminator.h"

#include "kernels/gelu.h"
#include "kernels/matmul.h"
#include "models/loss_gradient.h"

namespace electra {

ElectraDiscriminator::ElectraDiscriminator(ModelBuilder& builder, const EncoderConfig& config,
                                           const EmbeddingTables& tables, int64_t batch,
                                           int64_t seq_len, const DiscriminatorHeads& heads)
    : config_(config),
      heads_(heads),
      encoder_(builder, str_cat(kPrefix, "electra."), config, tables, batch, seq_len,
               DropoutSites{DropoutSites::kDiscriminatorSiteBase}) {
  const int64_t rows = batch * seq_len, h = config.hidden;
  head_span_.first = builder.declared();
  if (heads.binary) {
    dense_ = Linear(builder, str_cat(kPrefix, "discriminator_predictions.dense."), h, h);
    prediction_ =
        Linear(builder, str_cat(kPrefix, "discriminator_predictions.dense_prediction."), h, 1);
    pre_ = builder.activation({rows, h});
    act_ = builder.activation({rows, h});
    logits_ = builder.activation({rows, 1});
    grad_act_ = builder.activation({rows, h});
    grad_pre_ = builder.activation({rows, h});
    reduce_ = builder.activation(DType::F32, {bias_gelu_backward_workspace_floats(rows, h)});
  }
  if (heads.mlm_rows > 0) mlm_.emplace(builder, kPrefix, config, tables, heads.mlm_rows);
  head_span_.end = builder.declared();
}

void ElectraDiscriminator::forward(Context& ctx, const DropoutPass& pass, const Tensor& ids,
                                   const Tensor& segment_ids, const Tensor& mask,
                                   const Tensor& mlm_positions) {
  const ModelPart part("discriminator");  // engine/op_observer.h
  encoder_.forward(ctx, pass, ids, segment_ids, mask);
  if (heads_.binary) {
    const Tensor hidden = as_rows(encoder_.output(), config_.hidden);
    dense_.forward_no_bias(ctx, hidden, pre_);
    run_op(ctx, BiasGeluForward{.x = pre_, .b = dense_.bias().value, .y = Out(act_)});
    prediction_.forward(ctx, act_, logits_);
  }
  if (mlm_) mlm_->forward(ctx, encoder_.output(), mlm_positions);
}

void ElectraDiscriminator::backward(Context& ctx, const DropoutPass& pass,
                                    const DiscriminatorGradients& dlogits,
                                    const GradientsReady& ready) {
  const ModelPart part("discriminator");  // engine/op_observer.h
  if (heads_.binary) {
    check_loss_gradient(dlogits.binary, logits_, "discriminator binary head");
    prediction_.backward(ctx, act_, dlogits.binary.reshape({logits_.dim(0), 1}), grad_act_);
    run_op(ctx, BiasGeluBackward{.dy = grad_act_,
                                 .x = pre_,
                                 .b = dense_.bias().value,
                                 .dx = Out(grad_pre_),
                                 .db = Out(dense_.bias().grad),
                                 .workspace = Out(reduce_)});
    dense_.backward_no_bias(ctx, as_rows(encoder_.output(), config_.hidden), grad_pre_,
                            as_rows(encoder_.grad_output(), config_.hidden));
  } else if (!mlm_) {
    zero_tensor(ctx.stream(), encoder_.grad_output());
  }
  // Without the binary head the MLM head writes the whole output gradient.
  if (mlm_) mlm_->backward(ctx, dlogits.mlm, encoder_.grad_output(), heads_.binary);
  if (ready) ready(ctx, head_span_);
  encoder_.backward(ctx, pass, ready);
}

}  // namespace electra
