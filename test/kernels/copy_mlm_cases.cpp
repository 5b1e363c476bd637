// softmax_xent then copy_mlm (kernels/copy_mlm.h), the all-tokens-mlm copy mechanism, for the op
// harness (test/common/op_case.h). Both ops overwrite their inputs (the logits with dlogits, the
// copy logits with their gradient), so the forward copies the inputs z and c into those buffers
// first: the gradient check compares the buffers with central differences of scale * sum(loss)
// w.r.t. z and c (rows that copy their label, a half-weighted row, a row of weight 0, padded
// columns); on the GPU (f32) loss, gradients and predictions match the CPU on rows of weight 0,
// inputs equal and unequal to their labels and a padded vocabulary. The distribution and its
// argmax, and a weight-0 row's loss: copy_mlm_test.cpp.
#include "engine/device.h"
#include "kernels/copy_mlm.h"
#include "kernels/softmax_xent.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

Fill values(std::vector<double> v) {
  return {.make = [v](size_t, uint64_t) { return v; }};
}

struct Rows {
  std::vector<double> copy, inputs, labels, weights;
};

OpCase copy_mlm(const std::string& shape, int64_t v, int64_t stride, double range, float scale,
                RngStream stream, const Rows& rows, unsigned modes) {
  const int64_t m = static_cast<int64_t>(rows.labels.size());
  // Logits uniform in [-range, range), 0 in the padded columns.
  auto logits = [v, stride, range](size_t n, uint64_t seed) {
    std::vector<double> z = random_vector<double>(n, seed, -range, range);
    for (size_t k = 0; k < n; ++k) z[k] = static_cast<int64_t>(k) % stride < v ? z[k] : 0.0;
    return z;
  };
  SoftmaxXentParams xent;
  xent.vocab = v;
  xent.scale = scale;
  xent.stream = stream;
  return OpCase{
      .op = "copy_mlm",
      .shape = shape,
      .tensors = {input("z", {m, stride}, {.make = logits}), input("c", {m}, values(rows.copy)),
                  input("inputs", {m}, values(rows.inputs), Kind::kI32),
                  input("labels", {m}, values(rows.labels), Kind::kI32),
                  input("weights", {m}, values(rows.weights), Kind::kF32),
                  // The buffers the ops overwrite: dLoss/dz and dLoss/dc.
                  grad("logits", "z", {m, stride}).relative({1e-4, 1e-4}),
                  grad("copy_logits", "c", {m}).relative({1e-5, 1e-5}),
                  output("loss", {m}, Kind::kParam).relative({1e-5, 1e-5}),
                  upstream("dloss", "loss", {m}, Kind::kParam,
                           values(std::vector<double>(m, scale))),
                  output("sample", {m}, Kind::kI32).bits(),
                  output("argmax", {m}, Kind::kI32).bits()},
      .forward =
          [xent, scale](Context& ctx, const Args& a) {
            copy_tensor(ctx.stream(), a["logits"], a["z"]);
            copy_tensor(ctx.stream(), a["copy_logits"], a["c"]);
            run_op(ctx, SoftmaxXent{.logits = Out(a["logits"]),
                                    .labels = a["labels"],
                                    .weights = a["weights"],
                                    .params = xent,
                                    .loss = Out(a["loss"]),
                                    .sample = Out(a["sample"]),
                                    .argmax = Out(a["argmax"])});
            run_op(ctx, CopyMlm{.copy_logits = a["copy_logits"],
                                .inputs = a["inputs"],
                                .labels = a["labels"],
                                .weights = a["weights"],
                                .scale = scale,
                                .xent_loss = Out(a["loss"]),
                                .dlogits = Out(a["logits"]),
                                .argmax = Out(a["argmax"])});
          },
      .modes = modes,
      .dtypes = {DType::F32},
  };
}

// The GPU rows: random copy logits, labels and inputs; every third row copies its label, every
// seventh has weight 0.
Rows random_rows(int64_t m, int64_t v) {
  Rows r{random_vector<double>(m, 4, -3.0, 3.0), {}, {}, std::vector<double>(m, 1.0)};
  const std::vector<int32_t> labels = random_ints(m, 5, 0, static_cast<int32_t>(v - 1));
  const std::vector<int32_t> inputs = random_ints(m, 6, 0, static_cast<int32_t>(v - 1));
  for (int64_t i = 0; i < m; ++i) {
    r.labels.push_back(labels[i]);
    r.inputs.push_back(i % 3 == 0 ? labels[i] : inputs[i]);
    if (i % 7 == 0) r.weights[i] = 0.0;
  }
  return r;
}

}  // namespace

std::vector<OpCase> op_cases() {
  // Rows 0 and 3 copy their label; row 1 is half-weighted, row 3 has weight 0.
  const Rows hand{{0.7, -1.2, 0.1, 2.0}, {3, 5, 2, 4}, {3, 6, 9, 4}, {1.0, 0.5, 1.0, 0.0}};
  return {
      copy_mlm("4x11_stride16", 11, 16, 2.0, 0.25f, RngStream{1, RngPurpose::kTest, 0, 0}, hand,
               kGradcheck | kGpu),
      copy_mlm("96x300_stride384", 300, 384, 4.0, 1.0f / 64, RngStream{2, RngPurpose::kTest, 0, 0},
               random_rows(96, 300), kGpu),
  };
}

}  // namespace electra::test
