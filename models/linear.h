// Linear: y = x W^T + b with W [out, in] and b [out] (HF's nn.Linear layout).
// backward: dx = dy W (written, or added to dx when accumulate_dx), dW += dy^T x, db += colsum(dy).
// Matmuls read the compute views of W and b (bf16 on a bf16 run: cuBLASLt fuses only a bias of the
// output's type into the GEMM).
#pragma once

#include <string>

#include "models/model_builder.h"

namespace electra {

class Linear {
 public:
  Linear() = default;
  // Parameters `prefix`weight [out, in] and `prefix`bias [out].
  Linear(ModelBuilder& builder, const std::string& prefix, int64_t in, int64_t out);
  Linear(Param weight, Param bias) : weight_(weight), bias_(bias) {}

  void forward(Context& ctx, const Tensor& x, const Tensor& y) const;
  // x W^T without the bias (for a following fused bias + GELU).
  void forward_no_bias(Context& ctx, const Tensor& x, const Tensor& y) const;
  // dx may be an unset Tensor{} (data == nullptr) when the input needs no gradient.
  void backward(Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx,
                bool accumulate_dx = false) const;
  // Only dW += dy^T x and dx (no bias gradient): the counterpart of forward_no_bias.
  void backward_no_bias(Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx,
                        bool accumulate_dx = false) const;
  // Only dx = dy W (or dx += dy W): the encoder's layers, whose weight and bias gradients run
  // batched across layers after their backward (models/linear_stack.h).
  void backward_dx(Context& ctx, const Tensor& dy, const Tensor& dx,
                   bool accumulate_dx = false) const;

  const Param& weight() const { return weight_; }
  const Param& bias() const { return bias_; }

 private:
  Param weight_;
  Param bias_;
};

}  // namespace electra
