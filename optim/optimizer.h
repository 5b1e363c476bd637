// Optimizer: AdamW (the official ELECTRA AdamWeightDecayOptimizer by default) or LAMB over the
// flat f32 parameter buffer of a ParameterStore, with global-norm gradient clipping and a learning
// rate schedule.
//
// Contract:
//   - The store must be allocated in f32 on the context's device (the optimizer kernels are f32
//     only; an f64 store, used by gradient checks, is refused with an Error).
//   - The state (moments m and v, f32, same flat layout as the parameters; the segment table; the
//     hyper-parameter tensor; the norm and the reduction workspace) is taken from `state_arena`,
//     which must hold state_bytes(store, kind). m and v start at zero.
//   - One segment per parameter of the store: weight decay applies to weights and embeddings and
//     not to LayerNorm parameters or biases (param_decays); the optional lr_mult callback gives a
//     per-parameter learning-rate factor (layer-wise LR decay in fine-tuning; default 1).
//     Alignment padding between parameters is neither counted in the norm nor updated.
//   - set_frozen(ctx, frozen) freezes the parameters `frozen` names (lr_mult 0 in the device
//     segment table: neither they nor their moments move, weight decay included) and unfreezes
//     the others (their lr_mult again). An upload that synchronises: call it between updates
//     (two-stage pre-training calls it at its stage switch), never per step; a captured
//     optimizer graph stays valid (the kernels read the table in device memory).
//   - The update counter and the learning-rate table (schedule.at(t) for t = 0..total_steps,
//     computed once at construction) live in device memory (a separate "schedule" arena).
//     step(ctx, record) performs the update the counter names: grad_norm computes the global
//     gradient norm and, in the same launch, records it where `record` says (a metrics
//     accumulator's rows; no_record(): nowhere), writes lr and the Adam step count into the
//     device hyper tensor and advances the counter; then clipping to max_grad_norm (<= 0: no
//     clipping) and the update of the parameters in place; when the norm is not finite the
//     kernels skip the update (parameters and moments untouched). No host value and no transfer:
//     an update can be replayed from a CUDA graph.
//     set_step(ctx, t) uploads the counter (start, resume). It does not zero the gradients (the
//     caller does).
//   - The update itself is documented in kernels/weight_update.h:
//       g' = g * min(1, max_norm / ||g||),  m = b1 m + (1 - b1) g',  v = b2 v + (1 - b2) g'^2
//       u  = m / (sqrt(v) + eps) [+ wd * p for decayed parameters]
//       AdamW: p -= lr * lr_mult * u;   LAMB: p -= lr * lr_mult * (||p_s|| / ||u_s||) * u
//     with bias correction (m / (1 - b1^t), v / (1 - b2^t)) as an option, off by default as in
//     the official code.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/arena.h"
#include "engine/context.h"
#include "engine/parameter_store.h"
#include "engine/yaml_config.h"
#include "kernels/weight_update.h"
#include "optim/schedule.h"

namespace electra {

enum class OptimizerKind : uint8_t { kAdamW, kLamb };

// "adamw" or "lamb"; UserError naming the value otherwise.
OptimizerKind parse_optimizer_kind(const std::string& name);
const char* optimizer_kind_name(OptimizerKind kind);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdamW;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-6f;
  float weight_decay = 0.01f;
  float max_grad_norm = 1.0f;  // global-norm clipping threshold; 0 disables clipping
  bool bias_correction = false;
  // schedule.peak is the peak learning rate (the YAML key optimizer.lr).
  LrSchedule schedule;
};

// Reads the YAML sections
//   optimizer: {kind: adamw|lamb, lr, beta1, beta2, eps, weight_decay, bias_correction,
//               max_grad_norm}
//   schedule:  {kind: linear|constant|cosine, warmup_steps}
// (every key optional, defaults as in OptimizerConfig) and sets the schedule's total to
// total_steps. Out-of-range values are UserErrors naming the key.
OptimizerConfig read_optimizer_config(ConfigNode optimizer, ConfigNode schedule,
                                      int64_t total_steps);

class Optimizer {
 public:
  using LrMultiplier = std::function<float(const ParamInfo&)>;

  Optimizer(Context& ctx, const ParameterStore& store, const OptimizerConfig& config,
            Arena& state_arena, const LrMultiplier& lr_mult = {});

  // Bytes of arena the optimizer state of `store` takes (with the arena's alignment); the store
  // need not be allocated.
  static size_t state_bytes(const ParameterStore& store, OptimizerKind kind);
  // Bytes of the schedule arena (learning-rate table and update counter).
  static size_t schedule_bytes(const OptimizerConfig& config);

  // The update the device counter names, its gradient norm recorded into `record` (see the
  // contract above).
  void step(Context& ctx, const NormRecord& record);
  using ParamPredicate = std::function<bool(const ParamInfo&)>;
  // Freezes the parameters `frozen` is true for and unfreezes the others (see the contract).
  void set_frozen(Context& ctx, const ParamPredicate& frozen);

  // Sets the device counter to `step` (0-based; an upload: setup and resume only).
  void set_step(Context& ctx, int64_t step);
  // set_step(ctx, step) then step(ctx, no_record()): for callers that drive the count from the
  // host.
  void step(Context& ctx, int64_t step);

  // The global norm of the gradient before clipping, on the device (f32 [1]); not finite when the
  // last step was skipped.
  const Tensor& norm() const { return norm_; }
  // The same read back (synchronises).
  float grad_norm(Context& ctx) const;
  double lr_at(int64_t step) const { return config_.schedule.at(step); }
  // The device update counter (i32 [1]: updates done), read by the pre-training micro-step
  // counter (kernels/step_scalars.h).
  const Tensor& counter() const { return counter_; }
  const OptimizerConfig& config() const { return config_; }

  // The f32 flat moments (for checkpoints: views, so a restore writes through them).
  const Tensor& m() const { return m_; }
  const Tensor& v() const { return v_; }

 private:
  OptimizerConfig config_;
  Tensor params_;
  Tensor grads_;
  Tensor m_;
  Tensor v_;
  SegmentTable table_;
  std::vector<ParamInfo> params_info_;  // the store's parameters, in segment order
  std::vector<float> lr_mults_;         // each segment's multiplier when not frozen
  Tensor hyper_;                        // f32 [kNumHyper] on the device
  Tensor norm_;                         // f32 [1]
  Tensor workspace_;  // f32 reduction workspace (grad_norm and, for LAMB, the trust ratios)
  Arena schedule_;    // the learning-rate table and the update counter
  Tensor lr_table_;   // f32 [total_steps + 1]
  Tensor counter_;    // i32 [1]
};

}  // namespace electra
