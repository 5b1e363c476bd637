// The step scalars (kernels/step_scalars.h) for the op harness (test/common/op_case.h), GPU only
// (integers and normalisers: no gradient). One case per rank of a 4 x 3 plan runs the micro-batches
// of several updates as the trainer does (next_micro_step, then loss_normalisers on the
// micro-batch's weights) and copies the block after each into a history, compared word by word
// with the CPU's: the header promises the same bits (integer arithmetic, explicitly rounded f32 for
// the masking rate, and f64 sums of 0/1 weights, exact in any order, for the normalisers). The
// masking rate follows a schedule that ends at update 6; micro-step s A + r a + m wraps 2^32 at the
// last update; one micro-batch masks nothing (a normaliser 1 / 0). The restart values (f64) are
// kept after each micro-batch and compared bit for bit: zero after an update's first, else the
// values written after the one before. The numbering, the formulas and
// every random-number op reading its step from memory: step_scalars_test.cpp.
#include <algorithm>
#include <cstring>

#include "kernels/step_scalars.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

constexpr int64_t kRanks = 4, kLocal = 3;
constexpr int64_t kSlots = 128 * 20;    // B x N masked slots
constexpr int64_t kTokens = 128 * 128;  // B x T tokens
// Past the schedule's end from update 6; 400000000 x 12 + 11 wraps 2^32.
const std::vector<int32_t> kUpdates = {0, 1, 2, 3, 5, 6, 9, 400000000};
const int64_t kMicroBatches = static_cast<int64_t>(kUpdates.size()) * kLocal;
// Micro-batch 1 of update 3 (the 4th): nothing masked.
constexpr int64_t kNothingMasked = 3 * kLocal + 1;
// The restart values (a metrics window): zeroed at each update's first micro-batch.
constexpr int64_t kWindow = 15;

// One row of weights per micro-batch, each 1 with probability p, else 0 (unused slots, padding);
// with `empty`, the row kNothingMasked all 0.
Fill weights(double p, int64_t row, bool empty) {
  return {.make = [=](size_t n, uint64_t seed) {
    std::vector<double> w = random_vector<double>(n, seed, 0.0, 1.0);
    for (double& x : w) x = x < p ? 1.0 : 0.0;
    if (empty)
      std::fill(w.begin() + kNothingMasked * row, w.begin() + (kNothingMasked + 1) * row, 0.0);
    return w;
  }};
}

OpCase rank_case(int64_t rank) {
  const MicroStepPlan plan{.accumulation = kRanks * kLocal,
                           .first = rank * kLocal,
                           .local = kLocal,
                           .mask_rate = {.start = 0.3f, .end = 0.15f, .updates = 7}};
  const float disc_weight = std::vector<float>{50.0f, 1.0f, 0.37f, 13.3f}[rank];
  StepScalars start;
  start.loss_scale = 1.0f / (kRanks * kLocal);
  std::vector<int32_t> words(kStepScalarWords, 0);
  std::memcpy(words.data(), &start, sizeof(start));
  return OpCase{
      .op = "step_scalars",
      .shape = "rank" + std::to_string(rank) + "_of_4x3",
      .tensors = {input("counters", {static_cast<int64_t>(kUpdates.size())},
                        fixed({kUpdates.begin(), kUpdates.end()}), Kind::kI32)
                      .any_shape("one element each update, as a counter of its own"),
                  input("slots", {kMicroBatches, kSlots}, weights(0.9, kSlots, true), Kind::kF32)
                      .any_shape("loss_normalisers sums weights of any shape"),
                  input("tokens", {kMicroBatches, kTokens}, weights(0.8, kTokens, false),
                        Kind::kF32)
                      .any_shape("loss_normalisers sums weights of any shape"),
                  updated("block", {kStepScalarWords}, fixed({words.begin(), words.end()}),
                          Kind::kI32)
                      .bits(),
                  output("history", {kMicroBatches, kStepScalarWords}, Kind::kI32).bits(),
                  updated("window", {kWindow}, {.lo = 1, .hi = 2}, Kind::kF64).bits(),
                  input("fills", {kMicroBatches, kWindow}, {.lo = 1, .hi = 2}, Kind::kF64),
                  output("windows", {kMicroBatches, kWindow}, Kind::kF64).bits()},
      .forward =
          [plan, disc_weight](Context& ctx, const Args& a) {
            using Over = LossNormaliser::Over;
            for (size_t u = 0; u < kUpdates.size(); ++u) {
              // The second normaliser over the slots on odd updates.
              const LossNormaliserPlan normalisers = {
                  LossNormaliser{.over = Over::kFirst, .factor = 1.0f},
                  LossNormaliser{.over = kUpdates[u] % 2 == 1 ? Over::kFirst : Over::kSecond,
                                 .factor = disc_weight},
                  LossNormaliser{.over = Over::kSecond, .factor = 1.0f}};
              const auto at = static_cast<int64_t>(u);
              for (int64_t m = 0; m < kLocal; ++m) {
                const int64_t j = at * kLocal + m;
                run_op(ctx, NextMicroStep{.counter = Out(a["counters"].rows(at, at + 1)),
                                          .plan = plan,
                                          .block = Out(a["block"]),
                                          .restart = Out(a["window"])});
                // The window after the advance (zero at an update's first micro-batch), then
                // refilled with micro-batch j's values for the next one to keep or zero.
                copy_tensor(ctx.stream(), a["windows"].rows(j, j + 1),
                            a["window"].reshape({1, kWindow}));
                copy_tensor(ctx.stream(), a["window"],
                            a["fills"].rows(j, j + 1).reshape({kWindow}));
                run_op(ctx, LossNormalisers{.first = a["slots"].rows(j, j + 1),
                                            .second = a["tokens"].rows(j, j + 1),
                                            .plan = normalisers,
                                            .block = Out(a["block"])});
                copy_tensor(ctx.stream(), a["history"].rows(j, j + 1), a["block"]);
              }
            }
          },
      .modes = kGpu,
      .dtypes = {DType::F32},  // no activation: the dtypes are the ops'
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  for (int64_t rank = 0; rank < kRanks; ++rank) cases.push_back(rank_case(rank));
  return cases;
}

}  // namespace electra::test
