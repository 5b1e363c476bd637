// The step scalars (kernels/step_scalars.h): the device micro-step counter, the loss normalisers
// computed from the weights with the host's former formulas, and every random-number op giving
// the same bits with its step read from memory (RngStream::step_at) as with the step by value.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "kernels/dropout.h"
#include "kernels/masking.h"
#include "kernels/softmax_xent.h"
#include "kernels/step_scalars.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

Tensor view(std::vector<float>& v) {
  return Tensor::view_of(v.data(), Device::CPU, {static_cast<int64_t>(v.size())});
}

// A zeroed step-scalar block and an update counter on the CPU, for next_micro_step.
struct MicroSteps {
  Context ctx = Context::cpu();
  std::vector<int32_t> words = std::vector<int32_t>(kStepScalarWords, 0);
  std::vector<int32_t> counter = {0};
  Tensor block = Tensor::view_of(words.data(), Device::CPU, {kStepScalarWords});
  Tensor count = Tensor::view_of(counter.data(), Device::CPU, {1});

  // next_micro_step at update `update`, zeroing `restart` at its first micro-batch.
  void next(int32_t update, const MicroStepPlan& plan, const Tensor& restart = Tensor{}) {
    counter[0] = update;
    run_op(ctx,
           NextMicroStep{
               .counter = Out(count), .plan = plan, .block = Out(block), .restart = Out(restart)});
  }
  const StepScalars& scalars() const { return *step_scalars_of(block); }
};

}  // namespace

TEST_CASE("next_micro_step numbers rank r's micro-batch m of update s as s A + r a + m",
          "[step_scalars]") {
  MicroSteps steps;
  const MicroStepPlan plan{
      .accumulation = 6, .first = 2, .local = 2, .mask_rate = {}};  // 3 ranks x 2, rank 1
  std::vector<uint32_t> seen;
  for (int32_t update = 0; update < 3; ++update) {
    for (int m = 0; m < 2; ++m) {
      steps.next(update, plan);
      seen.push_back(steps.scalars().micro_step);
    }
  }
  CHECK(seen == std::vector<uint32_t>{2, 3, 8, 9, 14, 15});
  CHECK(steps.scalars().micro == 0);
}

TEST_CASE("next_micro_step zeroes the restart values at an update's first micro-batch only",
          "[step_scalars]") {
  MicroSteps steps;
  const MicroStepPlan plan{.accumulation = 3, .first = 0, .local = 3, .mask_rate = {}};
  std::vector<double> window(5);
  // Three updates of 3 micro-batches: the values written after each micro-batch survive the
  // next one within the update and are zeroed by the next update's first.
  for (int32_t update = 0; update < 3; ++update) {
    for (int m = 0; m < 3; ++m) {
      steps.next(update, plan, test::view(window));
      const double expect = m == 0 ? 0.0 : 10.0 * update + m;
      CHECK(window == std::vector<double>(5, expect));
      std::fill(window.begin(), window.end(), 10.0 * update + m + 1);
    }
  }
}

TEST_CASE("loss_normalisers: loss_scale x factor / the sum of the first or the second weights",
          "[step_scalars]") {
  Context ctx = Context::cpu();
  std::vector<int32_t> words(kStepScalarWords, 0);
  const Tensor block = Tensor::view_of(words.data(), Device::CPU, {kStepScalarWords});
  step_scalars_of(block)->loss_scale = 1.0f / 3.0f;
  std::vector<float> slots{1, 1, 0, 1, 1, 1, 0}, tokens(37, 1.0f);
  tokens[5] = tokens[30] = 0;
  using Over = LossNormaliser::Over;
  // ELECTRA's: the MLM mean over 5 slots, the BCE x 50 over 35 tokens, a mean over the tokens.
  LossNormaliserPlan plan = {LossNormaliser{.over = Over::kFirst, .factor = 1.0f},
                             LossNormaliser{.over = Over::kSecond, .factor = 50.0f},
                             LossNormaliser{.over = Over::kSecond, .factor = 1.0f}};
  run_op(ctx, LossNormalisers{
                  .first = view(slots), .second = view(tokens), .plan = plan, .block = Out(block)});
  const float loss_scale = 1.0f / 3.0f;
  const StepScalars& s = *step_scalars_of(block);
  CHECK(s.normalisers[0] == static_cast<float>(loss_scale / 5.0));
  CHECK(s.normalisers[1] == static_cast<float>(loss_scale * 50.0f / 35.0));
  CHECK(s.normalisers[2] == static_cast<float>(loss_scale / 35.0));
  CHECK(s.loss_scale == loss_scale);  // the other words stay
  CHECK(s.micro_step == 0);
  // The BCE over the slots instead (electra-15).
  plan[1].over = Over::kFirst;
  run_op(ctx, LossNormalisers{
                  .first = view(slots), .second = view(tokens), .plan = plan, .block = Out(block)});
  CHECK(s.normalisers[1] == static_cast<float>(loss_scale * 50.0f / 5.0));
  CHECK(normaliser_at(block, 1) == &s.normalisers[1]);
}

TEST_CASE("next_micro_step writes the update's masking rate: constant or a linear schedule",
          "[step_scalars]") {
  MicroSteps steps;
  MicroStepPlan plan;
  plan.mask_rate.start = 0.3f;
  plan.mask_rate.end = 0.15f;
  auto rate_at = [&](int32_t update) {
    steps.next(update, plan);
    return steps.scalars().mask_prob;
  };
  CHECK(rate_at(0) == 0.3f);  // no schedule: mask_prob throughout
  CHECK(rate_at(77) == 0.3f);
  plan.mask_rate.updates = 101;
  CHECK(rate_at(0) == 0.3f);
  CHECK(rate_at(50) == Approx(0.225f));
  CHECK(rate_at(100) == 0.15f);
  CHECK(rate_at(500) == 0.15f);  // past the end (a run extended on resume): the end rate
}

TEST_CASE("masking, dropout and sampling read the step from memory with the same bits",
          "[step_scalars]") {
  Context ctx = Context::cpu(9);
  const uint32_t step = 41;
  uint32_t stored = step;
  auto by_value = [&](RngPurpose p) { return ctx.rng(p, step); };
  auto from_memory = [&](RngPurpose p) {
    RngStream s = ctx.rng(p, 0);
    s.step_at = &stored;
    return s;
  };
  {  // dropout
    std::vector<float> x = test::random_vector<float>(1000, 3), a(1000), b(1000);
    run_op(ctx, Dropout{.x = view(x),
                        .site = DropoutSite{by_value(RngPurpose::kDropout), 5, 0.3f},
                        .y = Out(view(a))});
    run_op(ctx, Dropout{.x = view(x),
                        .site = DropoutSite{from_memory(RngPurpose::kDropout), 5, 0.3f},
                        .y = Out(view(b))});
    CHECK(a == b);
  }
  {  // masking
    std::vector<int32_t> ids(2 * 16);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = 4 + static_cast<int32_t>(i);
    auto run = [&](const RngStream& stream) {
      MaskingParams params;
      params.pad_id = 0, params.cls_id = 1, params.sep_id = 2, params.mask_id = 3;
      params.mask_prob = 0.25f;
      params.stream = stream;
      std::vector<int32_t> out(32), pos(8), orig(8);
      std::vector<float> w(8);
      run_op(ctx, MaskTokens{.ids = Tensor::view_of(ids.data(), Device::CPU, {2, 16}),
                             .params = params,
                             .masked_ids = Out(Tensor::view_of(out.data(), Device::CPU, {2, 16})),
                             .positions = Out(Tensor::view_of(pos.data(), Device::CPU, {2, 4})),
                             .original = Out(Tensor::view_of(orig.data(), Device::CPU, {2, 4})),
                             .weights = Out(Tensor::view_of(w.data(), Device::CPU, {2, 4}))});
      return std::make_pair(out, pos);
    };
    CHECK(run(by_value(RngPurpose::kMasking)) == run(from_memory(RngPurpose::kMasking)));
  }
  {  // the generator's sample, and the scale read from memory
    auto run = [&](const RngStream& stream, DeviceScalar<float> scale) {
      std::vector<float> logits = test::random_vector<float>(4 * 50, 8, -3.0, 3.0), w{1, 1, 0, 1},
                         loss(4);
      std::vector<int32_t> labels{3, 7, 0, 49}, sample(4), argmax(4);
      SoftmaxXentParams params;
      params.vocab = 50;
      params.scale = scale;
      params.stream = stream;
      run_op(ctx, SoftmaxXent{.logits = Out(Tensor::view_of(logits.data(), Device::CPU, {4, 50})),
                              .labels = Tensor::view_of(labels.data(), Device::CPU, {4}),
                              .weights = view(w),
                              .params = params,
                              .loss = Out(view(loss)),
                              .sample = Out(Tensor::view_of(sample.data(), Device::CPU, {4})),
                              .argmax = Out(Tensor::view_of(argmax.data(), Device::CPU, {4}))});
      return std::make_pair(sample, logits);
    };
    const float scale = 0.125f;
    CHECK(run(by_value(RngPurpose::kSample), scale) ==
          run(from_memory(RngPurpose::kSample), DeviceScalar<float>::in(&scale)));
  }
}
