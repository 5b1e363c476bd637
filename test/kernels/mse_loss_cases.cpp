// mse_loss (kernels/mse_loss.h) for the op harness (test/common/op_case.h): the forward also
// writes the gradient, so the gradient check compares dpredictions with central differences of
// scale * sum(loss) (no backward); on the GPU loss and dpredictions equal the CPU's bits in f32
// (the same products in the same order) and are within tolerance with bf16 predictions, on a
// ragged number of rows with padding rows, and in place (dpredictions written over the
// predictions, as the CPU reference writes them too). Hand values: mse_loss_test.cpp.
#include "kernels/mse_loss.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

// The op on a case's tensors, dpredictions written into the tensor named `dpredictions`.
void run_mse_loss(Context& ctx, const Args& a, float scale, const char* dpredictions) {
  run_op(ctx, MseLoss{.predictions = a["predictions"],
                      .targets = a["targets"],
                      .weights = a["weights"],
                      .scale = scale,
                      .loss = Out(a["loss"]),
                      .dpredictions = Out(a[dpredictions])});
}

OpCase mse_loss(const std::string& shape, int64_t n, float scale,
                std::function<std::vector<double>(size_t, uint64_t)> weights, unsigned modes) {
  return OpCase{
      .op = "mse_loss",
      .shape = shape,
      .tensors = {input("predictions", {n}, {.lo = -3, .hi = 3}),
                  input("targets", {n}, {.lo = 0, .hi = 1}, Kind::kF32),
                  input("weights", {n}, {.make = std::move(weights)}, Kind::kF32),
                  // bf16 runs: loss is f32 from the same rounded predictions.
                  output("loss", {n}, Kind::kParam).relative({0, 1e-5}).f32_bits(),
                  // The loss is scale * sum(loss): its weights are the constant scale.
                  upstream(
                      "dloss", "loss", {n}, Kind::kParam,
                      {.make = [scale](size_t count,
                                       uint64_t) { return std::vector<double>(count, scale); }}),
                  grad("dpredictions", "predictions", {n}).relative({0, 2e-2}).f32_bits()},
      .forward = [scale](Context& ctx,
                         const Args& a) { run_mse_loss(ctx, a, scale, "dpredictions"); },
      .modes = modes,
  };
}

// The regression head's call: dpredictions written over the predictions it is computed from.
// f32: the bits of the CPU in place (the same products in the same order); bf16: dpredictions
// rounded once (2^-9 relative).
OpCase mse_loss_in_place(const std::string& shape, int64_t n, float scale,
                         std::function<std::vector<double>(size_t, uint64_t)> weights) {
  return OpCase{
      .op = "mse_loss",
      .shape = shape,
      .tensors = {updated("predictions", {n}, {.lo = -3, .hi = 3}, Kind::kAct)
                      .relative({0, 2e-2})
                      .f32_bits()
                      .any_dtype("in place, predictions and dpredictions change dtype together: "
                                 "in f64 the call of an f64 run"),
                  input("targets", {n}, {.lo = 0, .hi = 1}, Kind::kF32),
                  input("weights", {n}, {.make = std::move(weights)}, Kind::kF32),
                  output("loss", {n}, Kind::kParam).relative({0, 1e-5}).f32_bits()},
      .forward = [scale](Context& ctx,
                         const Args& a) { run_mse_loss(ctx, a, scale, "predictions"); },
      .modes = kGpu,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  // 48 rows: the last 8 padding, one half-weighted.
  auto padded_tail = [](size_t n, uint64_t) {
    std::vector<double> w(n, 1.0);
    for (size_t i = 40; i < n; ++i) w[i] = 0.0;
    w[5] = 0.5;
    return w;
  };
  // A padding row every 64 rows.
  auto every_64th = [](size_t n, uint64_t) {
    std::vector<double> w(n, 1.0);
    for (size_t i = 9; i < n; i += 64) w[i] = 0.0;
    return w;
  };
  const int64_t ragged = 3 * 256 + 37;
  return {
      mse_loss("48_padded", 48, 1.0f / 39.5f, padded_tail, kGradcheck | kGpu),
      mse_loss("805_ragged", ragged, 1.0f / ragged, every_64th, kGpu),
      mse_loss_in_place("805_ragged_in_place", ragged, 1.0f / ragged, every_64th),
  };
}

}  // namespace electra::test
