// The encoder's per-layer buffers stacked along a leading layer dimension, so that the weight
// gradients of its layers run as one strided-batched GEMM per linear (models/linear_stack.h): the
// inputs X of the four linears of layer l sit at l x a fixed stride in their stack, and so do the
// gradients dY of their outputs, kept per layer until the batched call.
//
// Saved activations (every layer keeps them for the backward anyway): the layer inputs
// `hidden` [L + 1, rows, H] (QKV's X; hidden[L] is the encoder's output), the attention outputs
// `mid` [L, rows, H] (the FFN input: FFN-in's X), the attention contexts `context` [L, rows, H]
// (the output projection's X) and the GELU outputs `act` [L, rows, F] (FFN-out's X).
//
// Output gradients, for a group of G layers (models/encoder.h: the layers whose weight gradients
// are computed in one batched call; layer l uses slot l % G): `grad_qkv` [G, rows, 3H],
// `grad_attention_output` and `grad_ffn_output` [G, rows, H], `grad_pre` [G, rows, F] (the FFN's
// pre-activation). They cost (3H + H + H + F) = 9H values a token a layer of the group (F = 4H):
// 75 MB a layer for ELECTRA-Small's discriminator at 16384 bf16 tokens (H 256); at as many tokens
// 226 MB a layer for Base (H 768) and 302 MB for Large, the generator a quarter or a third of
// that. G = 1 costs one layer's worth, about what the shared buffers they replace cost (9H a
// token instead of 7H: Q/K/V's 3H and the pre-activation's F).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "models/electra_config.h"
#include "models/model_builder.h"

namespace electra {

// Item i of a stack [n, ...] as a tensor of dims (i < n).
inline Tensor stack_item(const Tensor& stack, int64_t i, std::initializer_list<int64_t> dims) {
  return stack.rows(i, i + 1).reshape(dims);
}

// Layer l's views of the stacks (its slot of the gradients), handed to its sublayers.
struct LayerStackViews {
  Tensor context;                                 // [B, T, H]
  Tensor act;                                     // [rows, F]
  Tensor grad_qkv;                                // [B, T, 3H]
  Tensor grad_attention_output, grad_ffn_output;  // [B, T, H]
  Tensor grad_pre;                                // [rows, F]
};

struct EncoderStacks {
  EncoderStacks() = default;
  // group: layers per batched weight-gradient call, 1 <= group <= config.layers.
  EncoderStacks(ModelBuilder& builder, const EncoderConfig& config, int64_t batch, int64_t seq_len,
                int64_t group)
      : batch(batch), seq_len(seq_len), hidden_size(config.hidden), ffn(config.ffn), group(group) {
    const int64_t rows = batch * seq_len, h = config.hidden, f = config.ffn, l = config.layers;
    ELECTRA_CHECK(group >= 1 && group <= l, "EncoderStacks: group ", group, " of ", l, " layers");
    hidden = builder.activation({l + 1, rows, h});
    mid = builder.activation({l, rows, h});
    context = builder.activation({l, rows, h});
    act = builder.activation({l, rows, f});
    grad_qkv = builder.activation({group, rows, 3 * h});
    grad_attention_output = builder.activation({group, rows, h});
    grad_ffn_output = builder.activation({group, rows, h});
    grad_pre = builder.activation({group, rows, f});
  }

  LayerStackViews layer(int64_t l) const {
    const int64_t b = batch, t = seq_len, h = hidden_size, slot = l % group;
    return LayerStackViews{
        .context = stack_item(context, l, {b, t, h}),
        .act = stack_item(act, l, {b * t, ffn}),
        .grad_qkv = stack_item(grad_qkv, slot, {b, t, 3 * h}),
        .grad_attention_output = stack_item(grad_attention_output, slot, {b, t, h}),
        .grad_ffn_output = stack_item(grad_ffn_output, slot, {b, t, h}),
        .grad_pre = stack_item(grad_pre, slot, {b * t, ffn}),
    };
  }
  // hidden[l] ([B, T, H]), l <= L.
  Tensor hidden_state(int64_t l) const {
    return stack_item(hidden, l, {batch, seq_len, hidden_size});
  }
  Tensor attention_output(int64_t l) const {
    return stack_item(mid, l, {batch, seq_len, hidden_size});
  }

  int64_t batch = 0, seq_len = 0, hidden_size = 0, ffn = 0, group = 1;
  Tensor hidden, mid, context, act;                                   // [L (+ 1), rows, .]
  Tensor grad_qkv, grad_attention_output, grad_ffn_output, grad_pre;  // [G, rows, .]
};

}  // namespace electra
