#include "models/mlm_head.h"

#include "kernels/gather.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "models/loss_gradient.h"

namespace electra {

MlmHead::MlmHead(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
                 const EmbeddingTables& tables, int64_t rows)
    : vocab_(config.vocab_size), tables_(&tables) {
  const int64_t e = config.embedding_size, h = config.hidden;
  span_.first = builder.declared();
  reduce_ =
      builder.activation(DType::F32, {std::max(layernorm_backward_workspace_floats(rows, e),
                                               bias_gelu_backward_workspace_floats(rows, e))});
  dense_ = Linear(builder, str_cat(prefix, "generator_predictions.dense."), h, e);
  norm_ = LayerNorm(builder, str_cat(prefix, "generator_predictions.LayerNorm."), rows, e,
                    config.layer_norm_eps, reduce_);
  const int64_t padded_vocab = tables.word_padded.value.dim(0);
  const std::string bias = str_cat(prefix, "generator_lm_head.bias");
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
  span_.end = builder.declared();
}

void MlmHead::forward(Context& ctx, const Tensor& hidden, const Tensor& positions) {
  positions_ = positions;
  run_op(ctx, GatherForward{.x = hidden, .positions = positions, .out = Out(gathered_)});
  dense_.forward_no_bias(ctx, gathered_, pre_);
  run_op(ctx, BiasGeluForward{.x = pre_, .b = dense_.bias().value, .y = Out(act_)});
  norm_.forward(ctx, act_, normed_);
  linear_forward(ctx, normed_, tables_->word_padded.compute, output_bias_.compute, logits_);
}

namespace {

// dz = dlogits as [B * N, Vp] (refused when unset), viewed as its V real columns. The GEMMs over
// the vocabulary read only those (the padding columns are zero): their sums are exactly those of
// an unpadded run, and the word table's padding rows never get a gradient. The bias gradient's
// padding receives the padding columns' zeros.
MatrixBatch real_columns(const Tensor& dlogits, const Tensor& logits, int64_t vocab) {
  check_loss_gradient(dlogits, logits, "MLM head");
  const Tensor dz = dlogits.reshape({logits.dim(0), logits.dim(1)});
  const int64_t rows = dz.dim(0), padded = dz.dim(1);
  return MatrixBatch{dz, 0, rows, vocab, padded, rows * padded};
}

}  // namespace

void MlmHead::backward(Context& ctx, const Tensor& dlogits, const Tensor& grad_hidden,
                       bool accumulate) {
  backward_own(ctx, dlogits, grad_hidden, accumulate);
  backward_tied(ctx, dlogits);
}

void MlmHead::backward_tied(Context& ctx, const Tensor& dlogits) {
  matmul_batched(ctx, real_columns(dlogits, logits_, vocab_), true, as_matrix(normed_), false,
                 as_matrix(tables_->word.grad), 1, 1, 1);
}

void MlmHead::backward_own(Context& ctx, const Tensor& dlogits, const Tensor& grad_hidden,
                           bool accumulate) {
  const MatrixBatch dz_real = real_columns(dlogits, logits_, vocab_);
  matmul_batched(ctx, dz_real, false, as_matrix(tables_->word.compute), false,
                 as_matrix(grad_normed_), 1);
  run_op(ctx, BiasGrad{.dy = dz_real.storage, .db = Out(output_bias_.grad)});
  norm_.backward(ctx, grad_normed_, act_, grad_act_);
  run_op(ctx, BiasGeluBackward{.dy = grad_act_,
                               .x = pre_,
                               .b = dense_.bias().value,
                               .dx = Out(grad_pre_),
                               .db = Out(dense_.bias().grad),
                               .workspace = Out(reduce_)});
  dense_.backward_no_bias(ctx, gathered_, grad_pre_, grad_gathered_);
  run_op(ctx, GatherBackward{.dout = grad_gathered_,
                             .positions = positions_,
                             .dx = Out(grad_hidden),
                             .accumulate = accumulate});
}

}  // namespace electra
