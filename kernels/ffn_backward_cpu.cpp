// ffn_backward on the CPU: the four unfused ops in the order models/feed_forward.cpp runs them on
// its wide path, so the bits are those of the unfused CPU path (kernels/ffn_backward.h).
#include "kernels/ffn_backward.h"

#include "kernels/gelu.h"
#include "kernels/matmul.h"

namespace electra {

void ffn_backward_unfused(Context& ctx, const FfnBackward& op) {
  run_op(ctx, op.norm);
  matmul(ctx, op.norm.dx, false, op.w2, false, op.grad_act);
  run_op(ctx, BiasGeluBackward{.dy = op.grad_act,
                               .x = op.pre,
                               .b = op.b1,
                               .dx = Out(op.grad_pre),
                               .db = Out(op.db1),
                               .workspace = Out(op.norm.workspace)});
  matmul(ctx, op.grad_pre, false, op.w1, false, op.norm.dresidual, 1, 1);
}

void FfnBackward::cpu(Context& ctx) const {
  ffn_backward_unfused(ctx, *this);
}

}  // namespace electra
