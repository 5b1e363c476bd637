// LayerNorm layers over the last dim (kernels/layernorm.h), parameters `prefix`weight (gamma) and
// `prefix`bias (beta) as HF names them.
//   LayerNorm:          y = LayerNorm(x). Saves mean and rstd of its rows; the input must stay
//                       alive until the backward (the caller owns it).
//   ResidualLayerNorm:  y = LayerNorm(dropout(x) + residual), BERT's post-LN residual block (the
//                       output of the attention and of the FFN). Saves the sum and its statistics.
#pragma once

#include <string>

#include "kernels/dropout.h"
#include "kernels/layernorm.h"
#include "models/model_builder.h"

namespace electra {

class LayerNorm {
 public:
  LayerNorm() = default;
  // For `rows` rows of `width`; `workspace` is the caller's f32 scratch for the GPU backward
  // (at least layernorm_backward_workspace_floats(rows, width) values).
  LayerNorm(ModelBuilder& builder, const std::string& prefix, int64_t rows, int64_t width,
            float eps, const Tensor& workspace);
  // With parameters declared elsewhere (the shared embedding LayerNorm); own saved statistics.
  LayerNorm(ModelBuilder& builder, Param gamma, Param beta, int64_t rows, int64_t width, float eps,
            const Tensor& workspace);

  // x, y [rows, width] (any shape with that many elements).
  void forward(Context& ctx, const Tensor& x, const Tensor& y) const;
  // dx written; dgamma, dbeta accumulated. x is the forward's input.
  void backward(Context& ctx, const Tensor& dy, const Tensor& x, const Tensor& dx) const;

  const Param& gamma() const { return gamma_; }
  const Param& beta() const { return beta_; }

 private:
  Param gamma_, beta_;
  float eps_ = 1e-12f;
  int64_t rows_ = 0, width_ = 0;
  Tensor mean_, rstd_, workspace_;
};

class ResidualLayerNorm {
 public:
  ResidualLayerNorm() = default;
  // For `rows` rows of `width`; `workspace` as LayerNorm's.
  ResidualLayerNorm(ModelBuilder& builder, const std::string& prefix, int64_t rows, int64_t width,
                    float eps, const Tensor& workspace);

  // x, residual, y: `rows` x `width` elements each.
  void forward(Context& ctx, const DropoutSite& site, const Tensor& x, const Tensor& residual,
               const Tensor& y) const;
  // The op forward() runs, with the tensors it saves: for a caller that fuses the block into a
  // larger op (FeedForward: kernels/ffn_forward.h), which must save the same tensors.
  ResidualLayerNormForward forward_op(const DropoutSite& site, const Tensor& x,
                                      const Tensor& residual, const Tensor& y) const;
  // dx and dresidual written (the gradients of x and of the residual); dgamma, dbeta accumulated;
  // and, when set, dbias += colsum(dx): the bias gradient of the linear whose output x is, added
  // in the same launch (so that linear's backward skips its BiasGrad: Linear::backward_no_bias).
  void backward(Context& ctx, const DropoutSite& site, const Tensor& dy, const Tensor& dx,
                const Tensor& dresidual, const Tensor& dbias = Tensor{}) const;
  // The op backward() runs: for a caller that fuses it into a larger op (FeedForward:
  // kernels/ffn_backward.h).
  ResidualLayerNormBackward backward_op(const DropoutSite& site, const Tensor& dy, const Tensor& dx,
                                        const Tensor& dresidual,
                                        const Tensor& dbias = Tensor{}) const;

 private:
  Param gamma_, beta_;
  float eps_ = 1e-12f;
  int64_t width_ = 0;
  Tensor sum_, mean_, rstd_, workspace_;
};

}  // namespace electra
