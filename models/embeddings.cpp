#include "models/embeddings.h"

#include "kernels/cast.h"
#include "kernels/elementwise_add.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"

namespace electra {

EmbeddingTables::EmbeddingTables(ModelBuilder& builder, const std::string& prefix,
                                 const EncoderConfig& config, int64_t vocab_rows)
    : word(builder.param(prefix + "embeddings.word_embeddings.weight",
                         {config.vocab_size, config.embedding_size}, ParamKind::kEmbedding,
                         vocab_rows)),
      word_padded(builder.padded(prefix + "embeddings.word_embeddings.weight")),
      position(builder.param(prefix + "embeddings.position_embeddings.weight",
                             {config.max_positions, config.embedding_size}, ParamKind::kEmbedding)),
      segment(builder.param(prefix + "embeddings.token_type_embeddings.weight",
                            {config.type_vocab_size, config.embedding_size},
                            ParamKind::kEmbedding)),
      norm_gamma(builder.param(prefix + "embeddings.LayerNorm.weight", {config.embedding_size},
                               ParamKind::kLayerNormGamma)),
      norm_beta(builder.param(prefix + "embeddings.LayerNorm.bias", {config.embedding_size},
                              ParamKind::kLayerNormBeta)) {}

GdesTables::GdesTables(ModelBuilder& builder, const std::string& prefix,
                       const EncoderConfig& config, int64_t vocab_rows,
                       const EmbeddingTables& base) {
  const ModelDTypes dtypes = builder.dtypes();
  const std::string word = prefix + "embeddings.word_embeddings" + kGdesResidualSuffix;
  const Param word_delta = builder.param(word, {config.vocab_size, config.embedding_size},
                                         ParamKind::kEmbedding, vocab_rows);
  const Param word_padded = builder.padded(word);
  const Param position =
      builder.param(prefix + "embeddings.position_embeddings" + kGdesResidualSuffix,
                    {config.max_positions, config.embedding_size}, ParamKind::kEmbedding);
  const Param segment =
      builder.param(prefix + "embeddings.token_type_embeddings" + kGdesResidualSuffix,
                    {config.type_vocab_size, config.embedding_size}, ParamKind::kEmbedding);
  auto summed = [&](const Param& base_table, const Param& delta) {
    const Tensor& b = base_table.value;
    const Tensor sum = builder.activation(dtypes.master, {b.dim(0), b.dim(1)});
    return Summed{b, delta.value, sum};
  };
  word_ = summed(base.word_padded, word_padded);
  position_ = summed(base.position, position);
  segment_ = summed(base.segment, segment);
  const Tensor& sum = word_.sum;
  word_compute_ = dtypes.activation == dtypes.master
                      ? sum
                      : builder.activation(dtypes.activation, {sum.dim(0), sum.dim(1)});
  // The unpadded word table is the first V rows of the padded one.
  tables_.word_padded = Param{word_.sum, word_padded.grad, word_compute_};
  tables_.word = Param{word_.sum.rows(0, config.vocab_size), word_delta.grad,
                       word_compute_.rows(0, config.vocab_size)};
  tables_.position = Param{position_.sum, position.grad, position_.sum};
  tables_.segment = Param{segment_.sum, segment.grad, segment_.sum};
  tables_.norm_gamma = builder.param(prefix + "embeddings.LayerNorm.weight",
                                     {config.embedding_size}, ParamKind::kLayerNormGamma);
  tables_.norm_beta = builder.param(prefix + "embeddings.LayerNorm.bias", {config.embedding_size},
                                    ParamKind::kLayerNormBeta);
}

void GdesTables::refresh(Context& ctx) const {
  for (const Summed* s : {&word_, &position_, &segment_}) {
    run_op(ctx, ElementwiseAdd{.a = s->base, .b = s->delta, .out = Out(s->sum)});
  }
  if (word_compute_.data != word_.sum.data)
    run_op(ctx, Cast{.in = word_.sum, .out = Out(word_compute_)});
}

Embeddings::Embeddings(ModelBuilder& builder, const EmbeddingTables& tables,
                       const std::string& prefix, const EncoderConfig& config, int64_t batch,
                       int64_t seq_len, uint32_t site, const Tensor& workspace)
    : tables_(&tables),
      config_(config),
      site_(site),
      eps_(config.layer_norm_eps),
      workspace_(workspace) {
  const int64_t e = config.embedding_size;
  if (config.has_projection()) {
    project_ = Linear(builder, prefix + "embeddings_project.", e, config.hidden);
    dropped_ = builder.activation({batch, seq_len, e});
    grad_dropped_ = builder.activation({batch, seq_len, e});
  }
  sum_ = builder.activation({batch, seq_len, e});
  mean_ = builder.activation(builder.dtypes().statistic, {batch, seq_len});
  rstd_ = builder.activation(builder.dtypes().statistic, {batch, seq_len});
  grad_sum_ = builder.activation({batch, seq_len, e});
  const size_t lookup_bytes =
      embedding_backward_workspace_bytes(batch, seq_len, config.type_vocab_size, e);
  lookup_workspace_ = builder.activation(DType::F32, {static_cast<int64_t>(lookup_bytes / 4 + 1)});
}

void Embeddings::forward(Context& ctx, const DropoutPass& pass, const Tensor& ids,
                         const Tensor& segment_ids, const Tensor& out) {
  const ModelPart part("embeddings");  // engine/op_observer.h
  ids_ = ids;
  segment_ids_ = segment_ids;
  sorted_ = pass.training;
  run_op(ctx, EmbeddingForward{.ids = ids,
                               .segment_ids = segment_ids,
                               .word = tables_->word.value,
                               .position = tables_->position.value,
                               .segment = tables_->segment.value,
                               .norm = {.gamma = tables_->norm_gamma.value,
                                        .beta = tables_->norm_beta.value,
                                        .eps = eps_,
                                        .site = pass.site(site_, config_.hidden_dropout)},
                               .sum = Out(sum_),
                               .y = Out(config_.has_projection() ? dropped_ : out),
                               .mean = Out(mean_),
                               .rstd = Out(rstd_),
                               .workspace = Out(sorted_ ? lookup_workspace_ : Tensor{})});
  if (config_.has_projection()) project_.forward(ctx, dropped_, out);
}

void Embeddings::backward_projection(Context& ctx, const Tensor& dout) {
  const ModelPart part("embeddings");  // engine/op_observer.h
  ELECTRA_CHECK(sorted_, "embeddings: a backward after an inference forward (no sorted ids)");
  if (config_.has_projection()) project_.backward(ctx, dropped_, dout, grad_dropped_);
}

void Embeddings::backward_tables(Context& ctx, const DropoutPass& pass, const Tensor& dout) {
  const ModelPart part("embeddings");  // engine/op_observer.h
  ELECTRA_CHECK(sorted_, "embeddings: a backward after an inference forward (no sorted ids)");
  // With the projection, its input's gradient (backward_projection) is the dropout's output's.
  const Tensor& dropped_grad = config_.has_projection() ? grad_dropped_ : dout;
  const int64_t e = config_.embedding_size;
  run_op(ctx, LayerNormBackward{.dy = as_rows(dropped_grad, e),
                                .x = as_rows(sum_, e),
                                .gamma = tables_->norm_gamma.value,
                                .mean = mean_.reshape({mean_.numel()}),
                                .rstd = rstd_.reshape({rstd_.numel()}),
                                .dy_dropout = pass.site(site_, config_.hidden_dropout),
                                .dx = Out(as_rows(grad_sum_, e)),
                                .dgamma = Out(tables_->norm_gamma.grad),
                                .dbeta = Out(tables_->norm_beta.grad),
                                .workspace = Out(workspace_)});
  run_op(ctx, EmbeddingBackward{.dout = grad_sum_,
                                .ids = ids_,
                                .segment_ids = segment_ids_,
                                .dword = Out(tables_->word.grad),
                                .dposition = Out(tables_->position.grad),
                                .dsegment = Out(tables_->segment.grad),
                                .workspace = Out(lookup_workspace_)});
}

}  // namespace electra
