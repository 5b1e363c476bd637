#include "models/feed_forward.h"

#include "kernels/ffn_backward.h"
#include "kernels/ffn_forward.h"

namespace electra {

FeedForward::FeedForward(ModelBuilder& builder, const std::string& layer_prefix,
                         const EncoderConfig& config, int64_t batch, int64_t seq_len,
                         uint32_t output_site, EncoderScratch& scratch,
                         const LayerStackViews& stacks)
    : config_(config),
      output_site_(output_site),
      scratch_(&scratch),
      act_(stacks.act),
      grad_output_(stacks.grad_ffn_output),
      grad_pre_(stacks.grad_pre) {
  const int64_t h = config.hidden, f = config.ffn, rows = batch * seq_len;
  intermediate_ = Linear(builder, layer_prefix + "intermediate.dense.", h, f);
  output_ = Linear(builder, layer_prefix + "output.dense.", f, h);
  norm_ = ResidualLayerNorm(builder, layer_prefix + "output.LayerNorm.", rows, h,
                            config.layer_norm_eps, scratch.reduce);
  pre_ = builder.activation({rows, f});
}

bool FeedForward::fused() const {
  return config_.fused_layers && pre_.dtype == DType::BF16 &&
         ffn_forward_supported(config_.hidden, config_.ffn);
}

void FeedForward::forward(Context& ctx, const DropoutPass& pass, const Tensor& x, const Tensor& y) {
  const int64_t h = config_.hidden;
  const DropoutSite site = pass.site(output_site_, config_.hidden_dropout);
  if (fused()) {
    // The whole block in one launch, saving what the unfused path saves.
    const ResidualLayerNormForward norm = norm_.forward_op(site, scratch_->sublayer, x, y);
    run_op(ctx, FfnForward{.x = norm.residual,
                           .w1 = intermediate_.weight().compute,
                           .b1 = intermediate_.bias().value,
                           .w2 = output_.weight().compute,
                           .b2 = output_.bias().compute,
                           .site = site,
                           .gamma = norm.gamma,
                           .beta = norm.beta,
                           .eps = norm.eps,
                           .pre = Out(pre_),
                           .act = Out(act_),
                           .sublayer = Out(norm.x),
                           .sum = norm.sum,
                           .y = norm.y,
                           .mean = norm.mean,
                           .rstd = norm.rstd});
    return;
  }
  intermediate_.forward_no_bias(ctx, as_rows(x, h), pre_);
  run_op(ctx, BiasGeluForward{.x = pre_, .b = intermediate_.bias().value, .y = Out(act_)});
  output_.forward(ctx, act_, as_rows(scratch_->sublayer, h));
  norm_.forward(ctx, site, scratch_->sublayer, x, y);
}

void FeedForward::backward(Context& ctx, const DropoutPass& pass, const Tensor& dy,
                           const Tensor& dx) {
  const int64_t h = config_.hidden;
  EncoderScratch& s = *scratch_;
  // The LayerNorm adds the output linear's bias gradient (the column sums of grad_output_).
  const ResidualLayerNormBackward norm = norm_.backward_op(
      pass.site(output_site_, config_.hidden_dropout), dy, grad_output_, dx, output_.bias().grad);
  if (fused()) {
    // The whole block in one launch, leaving grad_output_ and grad_pre_ as the unfused path does.
    run_op(ctx, FfnBackward{.norm = norm,
                            .pre = pre_,
                            .w1 = intermediate_.weight().compute,
                            .b1 = intermediate_.bias().value,
                            .w2 = output_.weight().compute,
                            .grad_act = Out(s.grad_act),
                            .grad_pre = Out(grad_pre_),
                            .db1 = Out(intermediate_.bias().grad)});
    return;
  }
  run_op(ctx, norm);
  output_.backward_dx(ctx, as_rows(grad_output_, h), s.grad_act);
  run_op(ctx, BiasGeluBackward{.dy = s.grad_act,
                               .x = pre_,
                               .b = intermediate_.bias().value,
                               .dx = Out(grad_pre_),
                               .db = Out(intermediate_.bias().grad),
                               .workspace = Out(s.reduce)});
  intermediate_.backward_dx(ctx, grad_pre_, as_rows(dx, h), /*accumulate_dx=*/true);
}

}  // namespace electra
