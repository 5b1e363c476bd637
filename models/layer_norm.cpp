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
  layernorm_forward(ctx, as_rows(x, width_), gamma_.value, beta_.value, eps_, as_rows(y, width_),
                    mean_, rstd_);
}

void LayerNorm::backward(Context& ctx, const Tensor& dy, const Tensor& x, const Tensor& dx) const {
  layernorm_backward(ctx, as_rows(dy, width_), as_rows(x, width_), gamma_.value, mean_, rstd_,
                     as_rows(dx, width_), gamma_.grad, beta_.grad, workspace_);
}

}  // namespace electra
