// disc_head (kernels/disc_head.h) for the op harness (test/common/op_case.h): a loss whose forward
// writes the gradient, so the gradient check compares dlogits with central differences of
// scale * sum(loss) on 64 tokens (the last 16 padding, one half-weighted); on the GPU loss,
// dlogits and counts against the CPU on 128 x 128 tokens plus a ragged tail with a padding token
// every 128, and the counts the same bits run to run (two-pass reduction); benchmarks over every
// token of Small (128 x 128) and Base (256 x 512) in bf16. Hand values, extreme logits, dlogits in
// place and refusals: disc_head_test.cpp.
#include "kernels/disc_head.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

OpCase disc_head(const std::string& shape, int64_t n, float scale, Fill weights, unsigned modes) {
  return OpCase{
      .op = "disc_head",
      .shape = shape,
      .tensors =
          {input("logits", {n}, {.lo = -6, .hi = 6}),
           input("labels", {n}, {.lo = 0, .hi = 1}, Kind::kI32),
           input("weights", {n}, std::move(weights), Kind::kF32),
           // f32 from the same (rounded) logits.
           output("loss", {n}, Kind::kParam).relative({1e-5, 1e-5}),
           // The loss is scale * sum(loss): its weights are the constant scale.
           upstream("dloss", "loss", {n}, Kind::kParam, constant(scale)),
           // f32: both sides compute s - y without cancellation (disc_head.h), the CPU within 8
           // u32 of the exact value (bf16_emulation_test), the GPU within 10 u32 (expf is within
           // 2 ulp, not 1): 18 u32 = 1.1e-6 apart, under 1e-5 (1 / (1 + exp(-z)) - y gave
           // 4.8e-5); bf16: dlogits stored in bf16 (2^-9).
           grad("dlogits", "logits", {n}).relative({1e-5, 2e-2}),
           // Sums of weights (integers and halves below 2^24: a count 0.5 off is 3e-5 relative
           // at these sizes) and the summed loss, f32 sums of f32 terms in another order.
           output("counts", {kDiscCounts}, Kind::kParam).relative({1e-5, 1e-5}),
           workspace("workspace", disc_head_workspace_size(n))},
      .forward =
          [scale](Context& ctx, const Args& a) {
            run_op(ctx, DiscHead{.logits = a["logits"],
                                 .labels = a["labels"],
                                 .weights = a["weights"],
                                 .scale = scale,
                                 .loss = Out(a["loss"]),
                                 .dlogits = Out(a["dlogits"]),
                                 .counts = Out(a["counts"]),
                                 .workspace = Out(a["workspace"])});
          },
      .modes = modes,
  };
}

// 1 everywhere but 0 at the tokens from `first` on every `every` (padding), `half` 0.5.
Fill padded(int64_t first, int64_t every, int64_t half = -1) {
  return {.make = [=](size_t n, uint64_t) {
    std::vector<double> w(n, 1.0);
    for (size_t i = first; i < n; i += every) w[i] = 0.0;
    if (half >= 0) w[half] = 0.5;
    return w;
  }};
}

}  // namespace

std::vector<OpCase> op_cases() {
  const int64_t ragged = 128 * 128 + 77;
  std::vector<OpCase> cases = {
      disc_head("64_padded", 64, 1.0f / 47.5f, padded(48, 1, 3), kGradcheck | kGpu),
      disc_head("16461_ragged", ragged, 1.0f / ragged, padded(100, 128), kGpu),
  };
  // Every token of a batch: B x T tokens, no padding.
  for (const auto& [name, n] : {std::pair{"small_128x128", int64_t{128 * 128}},
                                std::pair{"base_256x512", int64_t{256 * 512}}}) {
    cases.push_back(disc_head(name, n, 1.0f / n, constant(1), kBench));
  }
  return cases;
}

}  // namespace electra::test
