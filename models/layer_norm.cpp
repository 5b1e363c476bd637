#include "models/layer_norm.h"

#include "kernels/layernorm.h"

namespace electra {

LayerNorm::LayerNorm(ModelBuilder& builder, const std::string& prefix, int64_t rows, int64_t width,
                     float eps, const Tensor& workspace)
    : LayerNorm(builder, builder.param(prefix + "weight", {width}, ParamKind::kLayerNormGamma),
                builder.param(prefix + "bias", {width}, ParamKind::kLayerNormBeta), rows, width,
                eps, workspace) {}

LayerNorm::LayerNorm(ModelBuilder& builder, Param gamma, Param beta, int64_t rows, int64_t width,
                     float eps, const Tensor& workspace)
    : gamma_(gamma),
      beta_(beta),
      eps_(eps),
      rows_(rows),
      width_(width),
      mean_(builder.activation(builder.dtypes().statistic, {rows})),
      rstd_(builder.activation(builder.dtypes().statistic, {rows})),
      workspace_(workspace) {}

void LayerNorm::forward(Context& ctx, const Tensor& x, const Tensor& y) const {
  run_op(ctx, LayerNormForward{.x = as_rows(x, width_),
                               .gamma = gamma_.value,
                               .beta = beta_.value,
                               .eps = eps_,
                               .y = Out(as_rows(y, width_)),
                               .mean = Out(mean_),
                               .rstd = Out(rstd_)});
}

void LayerNorm::backward(Context& ctx, const Tensor& dy, const Tensor& x, const Tensor& dx) const {
  run_op(ctx, LayerNormBackward{.dy = as_rows(dy, width_),
                                .x = as_rows(x, width_),
                                .gamma = gamma_.value,
                                .mean = mean_,
                                .rstd = rstd_,
                                .dx = Out(as_rows(dx, width_)),
                                .dgamma = Out(gamma_.grad),
                                .dbeta = Out(beta_.grad),
                                .workspace = Out(workspace_)});
}

ResidualLayerNorm::ResidualLayerNorm(ModelBuilder& builder, const std::string& prefix, int64_t rows,
                                     int64_t width, float eps, const Tensor& workspace)
    : gamma_(builder.param(prefix + "weight", {width}, ParamKind::kLayerNormGamma)),
      beta_(builder.param(prefix + "bias", {width}, ParamKind::kLayerNormBeta)),
      eps_(eps),
      width_(width),
      sum_(builder.activation({rows, width})),
      mean_(builder.activation(builder.dtypes().statistic, {rows})),
      rstd_(builder.activation(builder.dtypes().statistic, {rows})),
      workspace_(workspace) {}

void ResidualLayerNorm::forward(Context& ctx, const DropoutSite& site, const Tensor& x,
                                const Tensor& residual, const Tensor& y) const {
  run_op(ctx, forward_op(site, x, residual, y));
}

ResidualLayerNormForward ResidualLayerNorm::forward_op(const DropoutSite& site, const Tensor& x,
                                                       const Tensor& residual,
                                                       const Tensor& y) const {
  return ResidualLayerNormForward{.x = as_rows(x, width_),
                                  .residual = as_rows(residual, width_),
                                  .site = site,
                                  .gamma = gamma_.value,
                                  .beta = beta_.value,
                                  .eps = eps_,
                                  .sum = Out(sum_),
                                  .y = Out(as_rows(y, width_)),
                                  .mean = Out(mean_),
                                  .rstd = Out(rstd_)};
}

void ResidualLayerNorm::backward(Context& ctx, const DropoutSite& site, const Tensor& dy,
                                 const Tensor& dx, const Tensor& dresidual,
                                 const Tensor& dbias) const {
  run_op(ctx, backward_op(site, dy, dx, dresidual, dbias));
}

ResidualLayerNormBackward ResidualLayerNorm::backward_op(const DropoutSite& site, const Tensor& dy,
                                                         const Tensor& dx, const Tensor& dresidual,
                                                         const Tensor& dbias) const {
  return ResidualLayerNormBackward{.dy = as_rows(dy, width_),
                                   .sum = sum_,
                                   .gamma = gamma_.value,
                                   .mean = mean_,
                                   .rstd = rstd_,
                                   .site = site,
                                   .dx = Out(as_rows(dx, width_)),
                                   .dresidual = Out(as_rows(dresidual, width_)),
                                   .dgamma = Out(gamma_.grad),
                                   .dbeta = Out(beta_.grad),
                                   .dbias = Out(dbias),
                                   .workspace = Out(workspace_)};
}

}  // namespace electra
