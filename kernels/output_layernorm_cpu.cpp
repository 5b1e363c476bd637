// output_layernorm on the CPU: the two unfused ops in the order models/self_attention.cpp runs
// them on its wide path, so the bits are those of the unfused CPU path
// (kernels/output_layernorm.h).
#include "kernels/output_layernorm.h"

#include "kernels/matmul.h"

namespace electra {

void output_layernorm_unfused(Context& ctx, const OutputLayerNormForward& op) {
  linear_forward(ctx, op.x, op.w, op.b, op.norm.x);
  run_op(ctx, op.norm);
}

void OutputLayerNormForward::cpu(Context& ctx) const {
  output_layernorm_unfused(ctx, *this);
}

}  // namespace electra
