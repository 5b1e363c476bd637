#include "models/generator.h"

#include "kernels/gather.h"
#include "kernels/gelu.h"
#include "kernels/matmul.h"

namespace electra {

ElectraGenerator::ElectraGenerator(ModelBuilder& builder, const EncoderConfig& config,
                                   const EmbeddingTables& tables, int64_t batch, int64_t seq_len,
                                   int64_t slots)
    : config_(config),
      tables_(&tables),
      encoder_(builder, str_cat(kPrefix, "electra."), config, tables, batch, seq_len,
               DropoutSites{0}) {
  const int64_t rows = batch * slots, e = config.embedding_size, h = config.hidden;
  head_span_.first = builder.declared();
  reduce_ =
      builder.activation(DType::F32, {std::max(layernorm_backward_workspace_floats(rows, e),
                                               bias_gelu_backward_workspace_floats(rows, e))});
  dense_ = Linear(builder, str_cat(kPrefix, "generator_predictions.dense."), h, e);
  norm_ = LayerNorm(builder, str_cat(kPrefix, "generator_predictions.LayerNorm."), rows, e,
                    config.layer_norm_eps, reduce_);
  const int64_t padded_vocab = tables.word_padded.value.dim(0);
  const std::string bias = str_cat(kPrefix, "generator_lm_head.bias");
  builder.param(bias, {config.vocab_size}, ParamKind::kBias, padded_vocab);
  output_bias_ = builder.padded(bias);
  gathered_ = builder.activation({rows, h});
  pre_ = builder.activation({rows, e});
  act_ = builder.activation({rows, e});
  normed_ = builder.activation({rows, e});
  logits_ = builder.activation({rows, padded_vocab});
  grad_normed_ = builder.activation({rows, e});
  grad_act_ = builder.activation({rows, e});
  grad_pre_ = builder.activation({rows, e});
  grad_gathered_ = builder.activation({rows, h});
  head_span_.end = builder.declared();
}

void ElectraGenerator::forward(Context& ctx, const Pass& pass, const Tensor& ids,
                               const Tensor& segment_ids, const Tensor& mask,
                               const Tensor& positions) {
  positions_ = positions;
  encoder_.forward(ctx, pass, ids, segment_ids, mask);
  gather_forward(ctx, encoder_.output(), positions, gathered_);
  dense_.forward_no_bias(ctx, gathered_, pre_);
  bias_gelu_forward(ctx, pre_, dense_.bias().value, act_);
  norm_.forward(ctx, act_, normed_);
  linear_forward(ctx, normed_, tables_->word_padded.compute, output_bias_.compute, logits_);
}

void ElectraGenerator::backward(Context& ctx, const Pass& pass, const GradientsReady& ready) {
  const Tensor& dz = logits_;
  // The GEMMs over the vocabulary read only dz's V real columns (the padding columns are zero):
  // their sums are exactly those of an unpadded run, and the word table's padding rows never get
  // a gradient. The bias gradient's padding receives the padding columns' zeros.
  const int64_t rows = dz.dim(0), padded = dz.dim(1);
  const MatrixBatch dz_real{dz, 0, rows, config_.vocab_size, padded, rows * padded};
  matmul_batched(ctx, dz_real, false, as_matrix(tables_->word.compute), false,
                 as_matrix(grad_normed_), 1);
  matmul_batched(ctx, dz_real, true, as_matrix(normed_), false, as_matrix(tables_->word.grad), 1, 1,
                 1);
  bias_grad(ctx, dz, output_bias_.grad);
  norm_.backward(ctx, grad_normed_, act_, grad_act_);
  bias_gelu_backward(ctx, grad_act_, pre_, dense_.bias().value, grad_pre_, dense_.bias().grad,
                     reduce_);
  dense_.backward_no_bias(ctx, gathered_, grad_pre_, grad_gathered_);
  if (ready) ready(ctx, head_span_);
  zero_tensor(ctx.stream(), encoder_.grad_output());
  gather_backward(ctx, grad_gathered_, positions_, encoder_.grad_output());
  encoder_.backward(ctx, pass, ready);
}

}  // namespace electra
