// Buffers that all layers of one encoder share. Each holds values that die before the next op of
// the same kind runs, so one set serves every layer (a layer's saved activations are its own, and
// so are the gradients its linears' batched weight gradients read: models/encoder_stacks.h).
//
// Forward: `sublayer` holds a sublayer's output (attention or FFN) before its residual LayerNorm.
// Backward: `residual` carries the gradient of the residual stream: a layer reads the gradient
// of its output there and leaves the gradient of its input there (via `residual_mid` between its
// two sublayers); `grad_context` holds the gradient of the attention context (the heads before
// the output projection), `grad_act` that of the FFN's GELU output.
#pragma once

#include "kernels/attention.h"
#include "kernels/ffn_backward.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "models/electra_config.h"
#include "models/model_builder.h"

namespace electra {

// The attention state of the encoder's layers (kernels/attention.h): the shape of each layer's
// saved attention state and of the shared attention workspace.
inline AttentionState encoder_attention_state(const ModelBuilder& builder,
                                              const EncoderConfig& config, int64_t batch,
                                              int64_t seq_len) {
  AttentionArgs args;
  args.heads = config.heads;
  args.impl = config.attention;
  return attention_state(builder.device(), args, batch, seq_len, config.hidden,
                         builder.dtypes().activation);
}

// A tensor of `state`'s shape and dtype in the builder's activation arena.
inline Tensor attention_state_tensor(ModelBuilder& builder, const AttentionState& state) {
  return state.view(builder.activation(state.dtype, {state.numel()}));
}

struct EncoderScratch {
  EncoderScratch() = default;
  EncoderScratch(ModelBuilder& builder, const EncoderConfig& config, int64_t batch,
                 int64_t seq_len) {
    const int64_t rows = batch * seq_len, h = config.hidden, f = config.ffn;
    const int64_t e = config.embedding_size;
    // The fused FFN backward's partial rows only where a layer takes it (FeedForward).
    const int64_t ffn_floats =
        ffn_forward_supported(h, f) ? ffn_backward_workspace_floats(rows, h, f) : 0;
    const int64_t reduce_floats = std::max(
        {layernorm_backward_workspace_floats(rows, h), layernorm_backward_workspace_floats(rows, e),
         bias_gelu_backward_workspace_floats(rows, f), ffn_floats, int64_t{1}});
    reduce = builder.activation(DType::F32, {reduce_floats});
    const AttentionState state = encoder_attention_state(builder, config, batch, seq_len);
    attention =
        state.scratch_view(builder.activation(state.scratch_dtype, {state.scratch_numel()}));
    residual = builder.activation({batch, seq_len, h});
    residual_mid = builder.activation({batch, seq_len, h});
    sublayer = builder.activation({batch, seq_len, h});
    grad_context = builder.activation({batch, seq_len, h});
    grad_act = builder.activation({rows, f});
  }

  Tensor reduce;     // f32: per-block partial sums of the GPU backward reductions
  Tensor attention;  // the attention workspace: encoder_attention_state's shape, scratch_dtype
  Tensor residual, residual_mid, sublayer, grad_context;  // [B, T, H]
  Tensor grad_act;                                        // [B * T, F]
};

}  // namespace electra
