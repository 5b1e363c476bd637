#include "models/encoder.h"

namespace electra {

Encoder::Encoder(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
                 const EmbeddingTables& tables, int64_t batch, int64_t seq_len, DropoutSites sites)
    : config_(config), scratch_(builder, config, batch, seq_len) {
  embeddings_span_.first = builder.declared();
  embeddings_ = Embeddings(builder, tables, prefix, config, batch, seq_len, sites.embeddings(),
                           scratch_.reduce);
  embeddings_span_.end = builder.declared();
  layers_.reserve(config.layers);
  hidden_.push_back(builder.activation({batch, seq_len, config.hidden}));
  for (int l = 0; l < config.layers; ++l) {
    const std::string layer_prefix = str_cat(prefix, "encoder.layer.", l, ".");
    const size_t first = builder.declared();
    layers_.push_back(Layer{
        SelfAttention(builder, layer_prefix + "attention.", config, batch, seq_len,
                      sites.attention_probs(l), sites.attention_output(l), scratch_),
        FeedForward(builder, layer_prefix, config, batch, seq_len, sites.ffn_output(l), scratch_)});
    layer_spans_.push_back(ParamSpan{first, builder.declared()});
    mid_.push_back(builder.activation({batch, seq_len, config.hidden}));
    hidden_.push_back(builder.activation({batch, seq_len, config.hidden}));
  }
}

void Encoder::forward(Context& ctx, const DropoutPass& pass, const Tensor& ids,
                      const Tensor& segment_ids, const Tensor& mask) {
  embeddings_.forward(ctx, pass, ids, segment_ids, hidden_[0]);
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].attention.forward(ctx, pass, hidden_[l], mask, mid_[l]);
    layers_[l].feed_forward.forward(ctx, pass, mid_[l], hidden_[l + 1]);
  }
}

void Encoder::backward(Context& ctx, const DropoutPass& pass, const GradientsReady& ready) {
  for (size_t l = layers_.size(); l-- > 0;) {
    layers_[l].feed_forward.backward(ctx, pass, scratch_.residual, scratch_.residual_mid);
    layers_[l].attention.backward(ctx, pass, scratch_.residual_mid, scratch_.residual);
    if (ready) ready(ctx, layer_spans_[l]);
  }
  embeddings_.backward(ctx, pass, scratch_.residual);
  if (ready) ready(ctx, embeddings_span_);
}

}  // namespace electra
