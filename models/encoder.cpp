#include "models/encoder.h"

#include <algorithm>

namespace electra {
namespace {

// Layers per batched weight-gradient call (models/encoder.h).
int64_t weight_grad_group(const EncoderConfig& config) {
  return config.weight_grad_group == 0 ? config.layers
                                       : std::min(config.weight_grad_group, config.layers);
}

}  // namespace

Encoder::Encoder(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
                 const EmbeddingTables& tables, int64_t batch, int64_t seq_len, DropoutSites sites)
    : config_(config),
      scratch_(builder, config, batch, seq_len),
      stacks_(builder, config, batch, seq_len, weight_grad_group(config)) {
  embeddings_span_.first = builder.declared();
  embeddings_ = Embeddings(builder, tables, prefix, config, batch, seq_len, sites.embeddings(),
                           scratch_.reduce);
  embeddings_span_.end = builder.declared();
  layers_.reserve(config.layers);
  hidden_.push_back(stacks_.hidden_state(0));
  for (int l = 0; l < config.layers; ++l) {
    const std::string layer_prefix = str_cat(prefix, "encoder.layer.", l, ".");
    const size_t first = builder.declared();
    const LayerStackViews views = stacks_.layer(l);
    layers_.push_back(
        Layer{SelfAttention(builder, layer_prefix + "attention.", config, batch, seq_len,
                            sites.attention_probs(l), sites.attention_output(l), scratch_, views),
              FeedForward(builder, layer_prefix, config, batch, seq_len, sites.ffn_output(l),
                          scratch_, views)});
    layer_spans_.push_back(ParamSpan{first, builder.declared()});
    mid_.push_back(stacks_.attention_output(l));
    hidden_.push_back(stacks_.hidden_state(l + 1));
  }
  std::vector<const Linear*> qkv, attention_output, intermediate, ffn_output;
  for (const Layer& layer : layers_) {
    qkv.push_back(&layer.attention.qkv());
    attention_output.push_back(&layer.attention.output());
    intermediate.push_back(&layer.feed_forward.intermediate());
    ffn_output.push_back(&layer.feed_forward.output());
  }
  const int64_t layers = config.layers;
  linear_stacks_ = {
      LinearStack(ffn_output, stacks_.act, stacks_.grad_ffn_output, false, "the FFN output weight"),
      LinearStack(intermediate, stacks_.mid, stacks_.grad_pre, false, "the FFN input weight"),
      LinearStack(attention_output, stacks_.context, stacks_.grad_attention_output, false,
                  "the attention output weight"),
      LinearStack(qkv, stacks_.hidden.rows(0, layers), stacks_.grad_qkv, true,
                  "the QKV projection")};
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
  backward_layers(ctx, pass, ready);
  backward_tables(ctx, pass);
}

void Encoder::backward_layers(Context& ctx, const DropoutPass& pass, const GradientsReady& ready) {
  const int64_t layers = static_cast<int64_t>(layers_.size()), group = stacks_.group;
  for (int64_t l = layers; l-- > 0;) {
    Layer& layer = layers_[static_cast<size_t>(l)];
    layer.feed_forward.backward(ctx, pass, scratch_.residual, scratch_.residual_mid);
    layer.attention.backward(ctx, pass, scratch_.residual_mid, scratch_.residual);
    if (l % group != 0) continue;
    // Layers [l, l + count) have left their output gradients in their slots: their weight
    // gradients, then their spans are final.
    const int64_t count = std::min(group, layers - l);
    for (const LinearStack& stack : linear_stacks_) stack.backward_weights(ctx, l, count);
    if (!ready) continue;
    for (int64_t k = l + count; k-- > l;) ready(ctx, layer_spans_[static_cast<size_t>(k)]);
  }
  embeddings_.backward_projection(ctx, scratch_.residual);
  if (ready) ready(ctx, embeddings_span_);
}

void Encoder::backward_tables(Context& ctx, const DropoutPass& pass) {
  embeddings_.backward_tables(ctx, pass, scratch_.residual);
}

}  // namespace electra
