#include "models/linear.h"

#include "kernels/matmul.h"

namespace electra {

Linear::Linear(ModelBuilder& builder, const std::string& prefix, int64_t in, int64_t out)
    : weight_(builder.param(prefix + "weight", {out, in}, ParamKind::kWeight)),
      bias_(builder.param(prefix + "bias", {out}, ParamKind::kBias)) {}

void Linear::forward(Context& ctx, const Tensor& x, const Tensor& y) const {
  linear_forward(ctx, x, weight_.compute, bias_.compute, y);
}

void Linear::forward_no_bias(Context& ctx, const Tensor& x, const Tensor& y) const {
  matmul(ctx, x, false, weight_.compute, true, y);
}

void Linear::backward_dx(Context& ctx, const Tensor& dy, const Tensor& dx,
                         bool accumulate_dx) const {
  matmul(ctx, dy, false, weight_.compute, false, dx, 1, accumulate_dx);
}

void Linear::backward_no_bias(Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx,
                              bool accumulate_dx) const {
  if (dx.data != nullptr) backward_dx(ctx, dy, dx, accumulate_dx);
  matmul(ctx, dy, true, x, false, weight_.grad, 1, 1);
}

void Linear::backward(Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx,
                      bool accumulate_dx) const {
  backward_no_bias(ctx, x, dy, dx, accumulate_dx);
  run_op(ctx, BiasGrad{.dy = dy, .db = Out(bias_.grad)});
}

}  // namespace electra
