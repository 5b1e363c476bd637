// LinearStack: the same linear in each layer of an encoder, whose weight gradients run for a
// group of layers as ONE strided-batched GEMM (and its bias gradient, when the stack owns it, as
// one grouped BiasGrad launch) instead of one GEMM (and one BiasGrad) a layer:
//   dW_l += dY_l^T X_l,   db_l += colsum(dY_l)   for l in [first, first + count)
// This needs three fixed strides, each checked here (an Error, never silently another layer's
// memory):
//   - layer l's parameters at l x stride from layer 0's in the flat buffers (value, gradient and
//     compute copy alike: ParameterStore lays identically declared layers out with equal spans;
//     param_stride below checks it for every layer);
//   - X_l at l x its size in the inputs' stack [L, rows, in] (models/encoder_stacks.h);
//   - dY_l in slot l % G of the gradients' stack [G, rows, out], so that a group [first,
//     first + count) with first % G + count <= G is count consecutive slots.
// On the CPU each matrix of the batch gets the bits of its own GEMM, and each group of BiasGrad
// those of its own call (test/kernels/matmul_test.cpp), so the batching changes no CPU bit.
#pragma once

#include <vector>

#include "kernels/matmul.h"
#include "models/linear.h"

namespace electra {

// The element stride between consecutive tensors of `views` (each the same parameter of
// consecutive layers), checked to be the same for every pair; 0 for unbound views (the planning
// pass: no memory yet) and for a single view. `what` names the parameter in the error.
int64_t param_stride(const std::vector<Tensor>& views, const char* what);

class LinearStack {
 public:
  LinearStack() = default;
  // layers[l]: layer l's linear (pointers into the encoder's layers, which outlive this);
  // inputs [L, rows, in]; grads [G, rows, out]. With `bias`, the bias gradient too.
  LinearStack(const std::vector<const Linear*>& layers, const Tensor& inputs, const Tensor& grads,
              bool bias, const char* what);

  // The weight (and bias) gradients of layers [first, first + count) from their inputs and the
  // output gradients in their slots: one batched GEMM, one grouped BiasGrad.
  void backward_weights(Context& ctx, int64_t first, int64_t count) const;

 private:
  int64_t layers_ = 0, group_ = 0, rows_ = 0, in_ = 0, out_ = 0;
  Tensor inputs_, grads_;
  Tensor weight_grads_;  // layer 0's weight gradient to the end of layer L - 1's, flat
  Tensor bias_grads_;    // likewise for the bias; unset without `bias`
  int64_t weight_stride_ = 0, bias_stride_ = 0;
};

}  // namespace electra
