#include "models/self_attention.h"

#include "kernels/output_layernorm.h"

namespace electra {

SelfAttention::SelfAttention(ModelBuilder& builder, const std::string& prefix,
                             const EncoderConfig& config, int64_t batch, int64_t seq_len,
                             uint32_t probs_site, uint32_t output_site, EncoderScratch& scratch,
                             const LayerStackViews& stacks)
    : config_(config),
      probs_site_(probs_site),
      output_site_(output_site),
      scratch_(&scratch),
      context_(stacks.context),
      grad_qkv_(stacks.grad_qkv),
      grad_output_(stacks.grad_attention_output) {
  const int64_t h = config.hidden, rows = batch * seq_len;
  const std::string self = prefix + "self.";
  qkv_ = Linear(builder.packed({self + "query.weight", self + "key.weight", self + "value.weight"},
                               {h, h}, ParamKind::kWeight),
                builder.packed({self + "query.bias", self + "key.bias", self + "value.bias"}, {h},
                               ParamKind::kBias));
  output_ = Linear(builder, prefix + "output.dense.", h, h);
  norm_ = ResidualLayerNorm(builder, prefix + "output.LayerNorm.", rows, h, config.layer_norm_eps,
                            scratch.reduce);
  qkv_out_ = builder.activation({batch, seq_len, 3 * h});
  // The flash kernels save only the row logsumexp L (and at bf16 the dropout keep bits, 1 bit an
  // element); version 1 and the CPU save P (attention.h).
  const AttentionState state = encoder_attention_state(builder, config, batch, seq_len);
  probs_ = attention_state_tensor(builder, state);
  if (state.keep_words)
    keep_ = state.keep_view(builder.activation(DType::I32, {state.keep_numel()}));
}

AttentionArgs SelfAttention::args(const DropoutPass& pass) const {
  return AttentionArgs{config_.heads, pass.p(config_.attention_dropout), pass.dropout, probs_site_,
                       config_.attention};
}

void SelfAttention::forward(Context& ctx, const DropoutPass& pass, const Tensor& x,
                            const Tensor& mask, const Tensor& y) {
  mask_ = mask;
  qkv_.forward(ctx, x, qkv_out_);
  run_op(ctx, AttentionForward{.qkv = qkv_out_,
                               .mask = mask,
                               .args = args(pass),
                               .saved = Out(probs_),
                               .scratch = Out(scratch_->attention),
                               .out = Out(context_),
                               .keep = Out(keep_)});
  const int64_t h = config_.hidden;
  const DropoutSite site = pass.site(output_site_, config_.hidden_dropout);
  if (config_.fused_layers && context_.dtype == DType::BF16 && output_layernorm_supported(h, h)) {
    // A narrow bf16 encoder (the generator): the output projection and the residual LayerNorm in
    // one launch, saving what the unfused path saves. (A CPU context sees bf16 only in the launch
    // counter's dry run.)
    run_op(ctx, OutputLayerNormForward{.x = as_rows(context_, h),
                                       .w = output_.weight().compute,
                                       .b = output_.bias().compute,
                                       .norm = norm_.forward_op(site, scratch_->sublayer, x, y)});
    return;
  }
  output_.forward(ctx, context_, scratch_->sublayer);
  norm_.forward(ctx, site, scratch_->sublayer, x, y);
}

void SelfAttention::backward(Context& ctx, const DropoutPass& pass, const Tensor& dy,
                             const Tensor& dx) {
  EncoderScratch& s = *scratch_;
  // dx receives the residual path first, then the Q/K/V path is added to it. The LayerNorm adds
  // the output projection's bias gradient (the column sums of grad_output_) in its own launch.
  norm_.backward(ctx, pass.site(output_site_, config_.hidden_dropout), dy, grad_output_, dx,
                 output_.bias().grad);
  output_.backward_dx(ctx, grad_output_, s.grad_context);
  run_op(ctx, AttentionBackward{.qkv = qkv_out_,
                                .mask = mask_,
                                .args = args(pass),
                                .saved = probs_,
                                .dout = s.grad_context,
                                .scratch = Out(s.attention),
                                .dqkv = Out(grad_qkv_),
                                .out = context_,
                                .keep = keep_});
  qkv_.backward_dx(ctx, grad_qkv_, dx, /*accumulate_dx=*/true);
}

}  // namespace electra
