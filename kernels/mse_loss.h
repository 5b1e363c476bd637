// mse_loss: squared error of a regression head (STS-B) with its gradient.
//
// Shapes: predictions [N], targets [N] f32, weights [N] f32 (0 on padding rows), loss [N],
// dpredictions [N] (may alias predictions: each element is read before it is written). With
// p = predictions[i], y = targets[i], w = weights[i]:
//   loss[i]         = w * (p - y)^2
//   dpredictions[i] = 2 * w * scale * (p - y)
// so dpredictions is the gradient of scale * sum_i loss[i]; scale = 1 / sum(w) gives the mean
// squared error of HF's MSELoss and the official ELECTRA regression task. The sum over rows is
// the caller's (the per-row values are what it reads back), so the op is elementwise and
// deterministic on every device.
//
// Dtypes: CUDA predictions/dpredictions f32 or bf16 (the same), loss f32, math in f32. CPU
// predictions, dpredictions and loss all f32 or all f64. No workspace.
#pragma once

#include "kernels/dispatch.h"

namespace electra {

struct MseLoss {
  static constexpr const char* kName = "mse_loss";
  In predictions, targets, weights;
  float scale = 0;
  Out loss, dpredictions;

  void check() const {
    const int64_t n = predictions.numel();
    ELECTRA_CHECK(targets.numel() == n && weights.numel() == n && loss.numel() == n &&
                      dpredictions.numel() == n,
                  "mse_loss: predictions ", predictions.str(), ", targets ", targets.str(),
                  ", weights ", weights.str(), ", loss ", loss.str(), ", dpredictions ",
                  dpredictions.str());
    check_dtype(targets, DType::F32, "mse_loss targets");
    check_dtype(weights, DType::F32, "mse_loss weights");
    check_float_dtypes(kName, {predictions, dpredictions}, {loss});
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
