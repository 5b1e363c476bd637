// ffn_forward on the CPU: the four unfused ops in the order models/feed_forward.cpp runs them on
// its wide path, so the bits are those of the unfused CPU path (kernels/ffn_forward.h).
#include "kernels/ffn_forward.h"

#include "kernels/gelu.h"
#include "kernels/matmul.h"

namespace electra {

void ffn_forward_unfused(Context& ctx, const FfnForward& op) {
  matmul(ctx, op.x, false, op.w1, true, op.pre);
  run_op(ctx, BiasGeluForward{.x = op.pre, .b = op.b1, .y = op.act});
  linear_forward(ctx, op.act, op.w2, op.b2, op.sublayer);
  run_op(ctx, ResidualLayerNormForward{.x = op.sublayer,
                                       .residual = op.x,
                                       .site = op.site,
                                       .gamma = op.gamma,
                                       .beta = op.beta,
                                       .eps = op.eps,
                                       .sum = op.sum,
                                       .y = op.y,
                                       .mean = op.mean,
                                       .rstd = op.rstd});
}

void FfnForward::cpu(Context& ctx) const {
  ffn_forward_unfused(ctx, *this);
}

}  // namespace electra
