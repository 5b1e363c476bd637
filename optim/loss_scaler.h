// LossScaler: loss scaling for f16 training (DESIGN section 5; issue 9), dynamic by default.
//
// The losses are multiplied by S before the backward (ElectraPretrainer::step's loss_scale), so
// the gradient buffer holds S g: gradients too small for f16 survive. The optimizer unscales by
// folding 1 / S into its clip factor (Optimizer::step's grad_scale, the hyper value
// kHyperGradScale of kernels/optimizer.h) and, on the device, skips the whole update when the
// global gradient norm is not finite: an overflow leaves parameters and moments untouched without
// a host sync.
//
// The scaler itself lives on the host: after each update the caller passes it the gradient norm
// it reads back anyway for the progress line (Optimizer::grad_norm). Dynamic mode:
//   norm not finite: the update was skipped; S = max(min_scale, S / 2); the good-step count
//                    restarts
//   norm finite:     one more good step; after growth_interval good steps in a row
//                    S = min(max_scale, 2 S) and the count restarts
// Static mode (a fixed `train.loss_scale`): S never changes; an overflowing update is still
// skipped. S stays a power of two in dynamic mode, so scaling and unscaling are exact: with f32
// gradients a run with any S equals the run with S = 1 bit for bit unless something overflows.
#pragma once

#include <cstdint>

namespace electra {

struct LossScalerConfig {
  bool dynamic = true;
  float initial_scale = 65536.0f;  // 2^16; in dynamic mode a power of two
  int64_t growth_interval = 2000;  // good updates in a row before S doubles
  float min_scale = 1.0f;
  float max_scale = 16777216.0f;  // 2^24: S must stay finite when nothing ever overflows
};

class LossScaler {
 public:
  // Error (a bug, not a user error) unless the config is consistent: positive finite scales,
  // powers of two in dynamic mode, min <= initial <= max, growth_interval > 0.
  explicit LossScaler(const LossScalerConfig& config = {});

  // S: what the losses are multiplied by in the next update.
  float scale() const { return scale_; }
  // 1 / S: what the optimizer multiplies the gradients by.
  float grad_scale() const { return 1.0f / scale_; }
  // Good updates since the last change of S (or the last overflow).
  int64_t good_steps() const { return good_steps_; }
  const LossScalerConfig& config() const { return config_; }

  // After an update whose (scaled) global gradient norm was `norm`: returns whether the update
  // was applied (norm finite), and adjusts S as described above.
  bool update(float norm);

 private:
  LossScalerConfig config_;
  float scale_;
  int64_t good_steps_ = 0;
};

}  // namespace electra
