// step_scalars: the per-micro-batch values of a pre-training update, kept in device memory so
// that no kernel takes them by value from the host: kernels read them through pointers
// (RngStream::step_at, DeviceScalar::at), and a CUDA graph of the micro-batch replays with fresh
// values (docs/ARCHITECTURE.md, "One pre-training update").
//
// The block: i32 [kStepScalarWords] holding a StepScalars (32-bit words):
//   micro_step     the Philox step of the micro-batch being computed (masking, dropout, sample)
//   micro          its index among the rank's `local` micro-batches of the update (0 .. local - 1)
//   loss_scale     multiplies the gradients (1 / A for A micro-batches per update over all ranks)
//   normalisers[k] kLossNormalisers loss scales, loss_scale x factor / a sum of weights (a loss
//                  that is a weighted mean over some rows: below); which loss reads which one,
//                  and over which rows, is the caller's (models/pretrainer.cpp)
//   mask_prob      the masking rate of the update (constant, or a linear schedule: below)
//
// next_micro_step(counter, plan, block), with counter the optimizer's update counter (i32 [1],
// updates done; kernels/weight_update.h):
//   micro_step = counter * plan.accumulation + plan.first + micro,  micro = (micro + 1) % local
// i.e. rank r's micro-batch m of update s is micro-step s A + r a + m, without a host value;
// and mask_prob = scheduled_mask_prob(plan.mask_rate, counter), the masking rate of update
// `counter`. With `restart` (f64 [R], or unset) it also sets restart to 0 when the micro-batch is
// an update's first (micro == 0 before the advance): the caller's per-update accumulators (the
// trainer's metrics window), zeroed in this launch instead of a memset of their own.
//
// loss_normalisers(first [M] f32, second [K] f32, plan, block): with the sums of the two weight
// vectors S_first = sum first, S_second = sum second (f64; exact for 0/1 weights), for each k
//   normalisers[k] = float(double(loss_scale * plan[k].factor) / S_{plan[k].over})
// (the product in f32: with factor 1 it is loss_scale exactly). These are the formulas the host
// used when it computed the normalisers, so the bits are unchanged. The CUDA kernels are one block
// each with fixed-order sums (deterministic); nothing here is per element of a model tensor.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/dispatch.h"

namespace electra {

constexpr int kLossNormalisers = 3;

struct StepScalars {
  uint32_t micro_step = 0;
  uint32_t micro = 0;
  float loss_scale = 1.0f;
  float normalisers[kLossNormalisers] = {0.0f, 0.0f, 0.0f};
  float mask_prob = 0.15f;
};

constexpr int64_t kStepScalarWords = 8;  // sizeof(StepScalars) rounded up (32 bytes)
static_assert(sizeof(StepScalars) <= kStepScalarWords * sizeof(int32_t));

// The masking rate of each update: linear from `start` at update 0 to `end` at update
// `updates` - 1 (masking.mask_prob_schedule: linear; Ankner et al. 2023), `start` throughout when
// updates <= 1.
struct MaskRateSchedule {
  float start = 0.15f;
  float end = 0.15f;
  int64_t updates = 0;
};

// The masking rate of update `update`: p0 + (p1 - p0) * s / (U - 1), s = clamp(update, 0, U - 1),
// in f32 with explicit roundings (no contraction), so both devices give the same bits.
ELECTRA_HD float scheduled_mask_prob(const MaskRateSchedule& schedule, int64_t update) {
  if (schedule.updates <= 1) return schedule.start;
  const int64_t last = schedule.updates - 1;
  const int64_t s = update < 0 ? 0 : (update > last ? last : update);
  const float f = div_rn(static_cast<float>(s), static_cast<float>(last));
  return add_rn(schedule.start, mul_rn(add_rn(schedule.end, -schedule.start), f));
}

// Where next_micro_step puts a rank's micro-batches: A = accumulation micro-batches per update
// over all ranks, of which this rank computes `local` starting at `first` (= rank x local).
struct MicroStepPlan {
  int64_t accumulation = 1;
  int64_t first = 0;
  int64_t local = 1;
  MaskRateSchedule mask_rate;
};

inline void check_step_scalars(const Tensor& block, const char* op) {
  check_tensor(block, {kStepScalarWords}, DType::I32, op);
}

// The fields of a block (pointers into its memory, on its device); throws Error unless `block`
// is one.
inline StepScalars* step_scalars_of(const Tensor& block) {
  check_step_scalars(block, "step scalars");
  return static_cast<StepScalars*>(block.data);
}
inline const uint32_t* micro_step_at(const Tensor& block) {
  return &step_scalars_of(block)->micro_step;
}
// Normaliser k (0 <= k < kLossNormalisers).
inline const float* normaliser_at(const Tensor& block, int k) {
  return &step_scalars_of(block)->normalisers[k];
}
inline const float* mask_prob_at(const Tensor& block) {
  return &step_scalars_of(block)->mask_prob;
}

struct NextMicroStep {
  static constexpr const char* kName = "next_micro_step";
  Out counter;
  MicroStepPlan plan;
  Out block;
  Out restart;  // unset (Out(Tensor{})): nothing to zero

  void check() const {
    check_tensor(counter, {1}, DType::I32, "next_micro_step counter");
    check_step_scalars(block, "next_micro_step block");
    if (restart.data != nullptr) check_dtype(restart, DType::F64, "next_micro_step restart");
    ELECTRA_CHECK(plan.local > 0 && plan.first >= 0 && plan.first + plan.local <= plan.accumulation,
                  "next_micro_step: micro-batches [", plan.first, ", ", plan.first + plan.local,
                  ") of ", plan.accumulation);
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

// One normaliser: loss_scale x factor over the sum of the first or the second weights.
struct LossNormaliser {
  enum class Over : uint8_t { kFirst, kSecond };
  Over over = Over::kFirst;
  float factor = 1.0f;
};
using LossNormaliserPlan = std::array<LossNormaliser, kLossNormalisers>;

struct LossNormalisers {
  static constexpr const char* kName = "loss_normalisers";
  In first, second;
  LossNormaliserPlan plan;
  Out block;

  void check() const {
    check_dtype(first, DType::F32, "loss_normalisers first");
    check_dtype(second, DType::F32, "loss_normalisers second");
    check_step_scalars(block, "loss_normalisers block");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
