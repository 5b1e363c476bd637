#include "models/self_attention.h"

namespace electra {

SelfAttention::SelfAttention(ModelBuilder& builder, const std::string& prefix,
                             const EncoderConfig& config, int64_t batch, int64_t seq_len,
                             uint32_t probs_site, uint32_t output_site, EncoderScratch& scratch)
    : config_(config), probs_site_(probs_site), output_site_(output_site), scratch_(&scratch) {
  const int64_t h = config.hidden, rows = batch * seq_len;
  const std::string self = prefix + "self.";
  qkv_ = Linear(builder.packed({self + "query.weight", self + "key.weight", self + "value.weight"},
                               {h, h}, ParamKind::kWeight),
                builder.packed({self + "query.bias", self + "key.bias", self + "value.bias"}, {h},
                               ParamKind::kBias));
  output_ = Linear(builder, prefix + "output.dense.", h, h);
  gamma_ = builder.param(prefix + "output.LayerNorm.weight", {h}, ParamKind::kLayerNormGamma);
  beta_ = builder.param(prefix + "output.LayerNorm.bias", {h}, ParamKind::kLayerNormBeta);
  qkv_out_ = builder.activation({batch, seq_len, 3 * h});
  // The flash kernels save only the row logsumexp L; version 1 and the CPU save P (attention.h).
  probs_ =
      attention_state_tensor(builder, encoder_attention_state(builder, config, batch, seq_len));
  context_ = builder.activation({batch, seq_len, h});
  sum_ = builder.activation({rows, h});
  mean_ = builder.activation(builder.dtypes().statistic, {rows});
  rstd_ = builder.activation(builder.dtypes().statistic, {rows});
}

AttentionArgs SelfAttention::args(const Pass& pass) const {
  return AttentionArgs{config_.heads, pass.p(config_.attention_dropout), pass.dropout, probs_site_};
}

void SelfAttention::forward(Context& ctx, const Pass& pass, const Tensor& x, const Tensor& mask,
                            const Tensor& y) {
  x_ = x;
  mask_ = mask;
  const int64_t h = config_.hidden;
  qkv_.forward(ctx, x, qkv_out_);
  run_op(ctx, AttentionForward{.qkv = qkv_out_,
                               .mask = mask,
                               .args = args(pass),
                               .saved = Out(probs_),
                               .scratch = Out(scratch_->attention),
                               .out = Out(context_)});
  output_.forward(ctx, context_, scratch_->sublayer);
  run_op(ctx, ResidualLayerNormForward{.x = as_rows(scratch_->sublayer, h),
                                       .residual = as_rows(x, h),
                                       .site = pass.site(output_site_, config_.hidden_dropout),
                                       .gamma = gamma_.value,
                                       .beta = beta_.value,
                                       .eps = config_.layer_norm_eps,
                                       .sum = Out(sum_),
                                       .y = Out(as_rows(y, h)),
                                       .mean = Out(mean_),
                                       .rstd = Out(rstd_)});
}

void SelfAttention::backward(Context& ctx, const Pass& pass, const Tensor& dy, const Tensor& dx) {
  const int64_t h = config_.hidden;
  EncoderScratch& s = *scratch_;
  // dx receives the residual path first, then the Q/K/V path is added to it.
  run_op(ctx, ResidualLayerNormBackward{.dy = as_rows(dy, h),
                                        .sum = sum_,
                                        .gamma = gamma_.value,
                                        .mean = mean_,
                                        .rstd = rstd_,
                                        .site = pass.site(output_site_, config_.hidden_dropout),
                                        .dx = Out(as_rows(s.sublayer, h)),
                                        .dresidual = Out(as_rows(dx, h)),
                                        .dgamma = Out(gamma_.grad),
                                        .dbeta = Out(beta_.grad),
                                        .workspace = Out(s.reduce)});
  output_.backward(ctx, context_, s.sublayer, s.grad_context);
  run_op(ctx, AttentionBackward{.qkv = qkv_out_,
                                .mask = mask_,
                                .args = args(pass),
                                .saved = probs_,
                                .dout = s.grad_context,
                                .scratch = Out(s.attention),
                                .dqkv = Out(s.qkv),
                                .out = context_});
  qkv_.backward(ctx, x_, s.qkv, dx, /*accumulate_dx=*/true);
}

}  // namespace electra
