#include "models/feed_forward.h"

namespace electra {

FeedForward::FeedForward(ModelBuilder& builder, const std::string& layer_prefix,
                         const EncoderConfig& config, int64_t batch, int64_t seq_len,
                         uint32_t output_site, EncoderScratch& scratch)
    : config_(config), output_site_(output_site), scratch_(&scratch) {
  const int64_t h = config.hidden, f = config.ffn, rows = batch * seq_len;
  intermediate_ = Linear(builder, layer_prefix + "intermediate.dense.", h, f);
  output_ = Linear(builder, layer_prefix + "output.dense.", f, h);
  gamma_ = builder.param(layer_prefix + "output.LayerNorm.weight", {h}, ParamKind::kLayerNormGamma);
  beta_ = builder.param(layer_prefix + "output.LayerNorm.bias", {h}, ParamKind::kLayerNormBeta);
  pre_ = builder.activation({rows, f});
  act_ = builder.activation({rows, f});
  sum_ = builder.activation({rows, h});
  mean_ = builder.activation(builder.dtypes().statistic, {rows});
  rstd_ = builder.activation(builder.dtypes().statistic, {rows});
}

void FeedForward::forward(Context& ctx, const Pass& pass, const Tensor& x, const Tensor& y) {
  x_ = x;
  const int64_t h = config_.hidden;
  intermediate_.forward_no_bias(ctx, as_rows(x, h), pre_);
  bias_gelu_forward(ctx, pre_, intermediate_.bias().value, act_);
  output_.forward(ctx, act_, as_rows(scratch_->a, h));
  residual_layernorm_forward(
      ctx, as_rows(scratch_->a, h), as_rows(x, h), pass.site(output_site_, config_.hidden_dropout),
      gamma_.value, beta_.value, config_.layer_norm_eps, sum_, as_rows(y, h), mean_, rstd_);
}

void FeedForward::backward(Context& ctx, const Pass& pass, const Tensor& dy, const Tensor& dx) {
  const int64_t h = config_.hidden;
  EncoderScratch& s = *scratch_;
  residual_layernorm_backward(ctx, as_rows(dy, h), sum_, gamma_.value, mean_, rstd_,
                              pass.site(output_site_, config_.hidden_dropout), as_rows(s.a, h),
                              as_rows(dx, h), gamma_.grad, beta_.grad, s.reduce);
  output_.backward(ctx, act_, as_rows(s.a, h), s.ffn_a);
  bias_gelu_backward(ctx, s.ffn_a, pre_, intermediate_.bias().value, s.ffn_b,
                     intermediate_.bias().grad, s.reduce);
  intermediate_.backward_no_bias(ctx, as_rows(x_, h), s.ffn_b, as_rows(dx, h),
                                 /*accumulate_dx=*/true);
}

}  // namespace electra
