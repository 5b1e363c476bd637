// The step scalars (kernels/step_scalars.h) on the GPU against the CPU: the block of every rank of
// a 4 x 3 plan compared word by word after each micro-batch of several updates, as the trainer
// runs them (next_micro_step, then loss_normalisers on the micro-batch's weights). The header
// promises the same bits: integer arithmetic, explicitly rounded f32 for the masking rate, and f64
// sums of 0/1 weights (exact in any order) for the normalisers.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "kernels/step_scalars.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

constexpr int64_t kSlots = 128 * 20;    // B x N masked slots
constexpr int64_t kTokens = 128 * 128;  // B x T tokens

std::vector<int32_t> words_of(const StepScalars& s) {
  std::vector<int32_t> words(kStepScalarWords, 0);
  std::memcpy(words.data(), &s, sizeof(s));
  return words;
}

// n weights, 1 with probability p, else 0 (unused slots, padding).
std::vector<float> random_weights(int64_t n, double p, uint64_t seed) {
  std::vector<float> w = test::random_vector<float>(n, seed, 0.0, 1.0);
  for (float& x : w) x = x < p ? 1.0f : 0.0f;
  return w;
}

}  // namespace

TEST_CASE("next_micro_step and loss_normalisers on the GPU write the CPU's block word by word",
          "[step_scalars][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("step_scalars", Device::CUDA, 1 << 20);
  constexpr int64_t kRanks = 4, kLocal = 3;
  const MaskRateSchedule schedule{.start = 0.3f, .end = 0.15f, .updates = 7};
  // Past the schedule's end from update 6; s A + r a + m wraps 2^32 at the last update.
  const std::vector<int32_t> updates = {0, 1, 2, 3, 5, 6, 9, 400000000};
  const float disc_weights[kRanks] = {50.0f, 1.0f, 0.37f, 13.3f};
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    INFO("rank " << rank);
    const MicroStepPlan plan{.accumulation = kRanks * kLocal,
                             .first = rank * kLocal,
                             .local = kLocal,
                             .mask_rate = schedule};
    StepScalars start;
    start.loss_scale = 1.0f / (kRanks * kLocal);
    std::vector<int32_t> expected = words_of(start), counter{0};
    const Tensor cpu_block = test::view(expected), cpu_counter = test::view(counter);
    const Tensor block = test::upload(gpu, arena, expected, {kStepScalarWords});
    const Tensor gpu_counter = arena.alloc<int32_t>({1});
    for (int32_t update : updates) {
      counter[0] = update;
      copy_tensor(gpu.stream(), gpu_counter, cpu_counter);
      for (int64_t m = 0; m < kLocal; ++m) {
        INFO("update " << update << ", micro-batch " << m);
        const uint64_t seed = static_cast<uint64_t>(update) * 100 + rank * 10 + m;
        std::vector<float> slots = random_weights(kSlots, 0.9, seed);
        std::vector<float> tokens = random_weights(kTokens, 0.8, seed + 5);
        if (update == 3 && m == 1) slots.assign(kSlots, 0.0f);  // nothing masked: 1 / 0
        using Over = LossNormaliser::Over;  // the second over the slots on odd updates
        const LossNormaliserPlan normalisers = {
            LossNormaliser{.over = Over::kFirst, .factor = 1.0f},
            LossNormaliser{.over = update % 2 == 1 ? Over::kFirst : Over::kSecond,
                           .factor = disc_weights[rank]},
            LossNormaliser{.over = Over::kSecond, .factor = 1.0f}};
        run_op(cpu,
               NextMicroStep{.counter = Out(cpu_counter), .plan = plan, .block = Out(cpu_block)});
        run_op(cpu, LossNormalisers{.first = test::view(slots),
                                    .second = test::view(tokens),
                                    .plan = normalisers,
                                    .block = Out(cpu_block)});
        const size_t mark = arena.mark();
        run_op(gpu, NextMicroStep{.counter = Out(gpu_counter), .plan = plan, .block = Out(block)});
        run_op(gpu, LossNormalisers{.first = test::upload(gpu, arena, slots, {kSlots}),
                                    .second = test::upload(gpu, arena, tokens, {kTokens}),
                                    .plan = normalisers,
                                    .block = Out(block)});
        CHECK(test::download<int32_t>(gpu, block) == expected);
        arena.rewind(mark);
      }
    }
    CHECK(step_scalars_of(cpu_block)->micro == 0);  // each update wrapped to micro-batch 0
  }
}
