// softmax_xent (kernels/softmax_xent.h) for the op harness (test/common/op_case.h). The op
// overwrites its logits with dlogits, so a case's forward copies the input x into the buffer
// "logits" first and the gradient w.r.t. x is what the buffer holds after the op: the gradient
// check compares it with central differences of scale * sum(loss) (padding rows and padded
// columns included); on the GPU loss and dlogits are within tolerance and samples and argmax
// identical (the same f32 logits give the same integer sample weights, whose sums are exact in the
// kernel's order too), at the generator's shape with padding rows (some with an invalid, unread
// label), at tiny odd rows (one column a lane, and 16-byte accesses), and at logits of +-60 with
// T = 0.3, where most weights are clamped or floor to 0 and a row's mass sits in a few columns;
// benchmarks at the MLM shapes in bf16 and f32. Hand values, ties, NaN, the weights and the
// sampling distribution: softmax_xent_test.cpp; a bad label, rows without finite logits and a NaN
// at column 0 on the GPU: softmax_xent_gpu_test.cpp.
#include "engine/device.h"
#include "kernels/softmax_xent.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

// Labels and weights given by hand or by a function of the row.
struct Rows {
  std::function<int32_t(int64_t row)> label;  // read only where weight > 0
  std::function<float(int64_t row)> weight;
};

Fill per_row(std::function<double(int64_t)> f) {
  return {.make = [f](size_t n, uint64_t) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = f(static_cast<int64_t>(i));
    return v;
  }};
}

OpCase softmax_xent(const std::string& shape, int64_t m, int64_t v, int64_t stride,
                    SoftmaxXentParams params, double range, const Rows& rows, unsigned modes) {
  params.vocab = v;
  const float scale = params.scale.value;
  auto op = [params](Context& ctx, const Args& a) {
    run_op(ctx, SoftmaxXent{.logits = Out(a["logits"]),
                            .labels = a["labels"],
                            .weights = a["weights"],
                            .params = params,
                            .loss = Out(a["loss"]),
                            .sample = Out(a["sample"]),
                            .argmax = Out(a["argmax"])});
  };
  return OpCase{
      .op = "softmax_xent",
      .shape = shape,
      .tensors =
          {input("x", {m, stride}, {.lo = -range, .hi = range}),
           input("labels", {m}, per_row([rows](int64_t i) { return rows.label(i); }), Kind::kI32),
           input("weights", {m}, per_row([rows](int64_t i) { return rows.weight(i); }), Kind::kF32),
           // dLoss/dx, written over the logits (padding rows and columns: 0).
           grad("logits", "x", {m, stride}).relative({1e-5, 2e-2}),
           // f32 in every run, from the same (rounded) logits.
           output("loss", {m}, Kind::kParam).relative({1e-5, 1e-5}),
           // The loss is scale * sum(loss): its weights are the constant scale.
           upstream("dloss", "loss", {m}, Kind::kParam,
                    per_row([scale](int64_t) { return scale; })),
           output("sample", {m}, Kind::kI32).bits(), output("argmax", {m}, Kind::kI32).bits(),
           // Row statistics of the benchmark's baseline (the op has no workspace).
           workspace("scratch", 2 * m)},
      .forward =
          [op](Context& ctx, const Args& a) {
            copy_tensor(ctx.stream(), a["logits"], a["x"]);
            op(ctx, a);
          },
      .modes = modes,
      // Repeated calls run on the previous call's dlogits: finite values, the same work.
      .bench_forward = op,
      // The logits read once and the dlogits written once.
      .bench_bytes = [m, stride](DType dtype,
                                 bool) { return 2.0 * m * stride * dtype_size(dtype); },
  };
}

SoftmaxXentParams params(RngStream stream, float scale, float temperature = 1.0f) {
  SoftmaxXentParams p;
  p.stream = stream;
  p.scale = scale;
  p.temperature = temperature;
  return p;
}

}  // namespace

std::vector<OpCase> op_cases() {
  // Row 2 is padding with an invalid label, which the op must not read.
  const Rows five{[](int64_t i) {
                    return std::vector<int32_t>{4, 96, -1, 0, 33}[i];
                  },
                  [](int64_t i) {
                    return std::vector<float>{1, 0.5f, 0, 2, 1}[i];
                  }};
  // The generator's rows: every 7th from 0 padding, every 7th from 3 padding with label -1.
  const int64_t m = 640, v = 30522, stride = 30592;  // a vocabulary padded to a multiple of 128
  const Rows generator{
      [v](int64_t i) { return i % 7 == 3 ? -1 : static_cast<int32_t>((i * 7919) % v); },
      [](int64_t i) { return i % 7 == 0 || i % 7 == 3 ? 0.0f : 1.0f; }};
  const Rows tiny{[](int64_t i) {
                    return std::vector<int32_t>{0, 2, 1, 1, 0}[i];
                  },
                  [](int64_t i) {
                    return std::vector<float>{1, 2, 0, 1, 0.5f}[i];
                  }};
  // Benchmarks: every row weighted, labels spread over the vocabulary.
  const Rows weighted{[v](int64_t i) { return static_cast<int32_t>((i * 7919) % v); },
                      [](int64_t) { return 1.0f; }};
  const RngStream sample{17, RngPurpose::kSample, 9, 0};
  std::vector<OpCase> cases = {
      softmax_xent("5x97_stride100", 5, 97, 100, params({1, RngPurpose::kSample, 0, 0}, 1 / 4.5f),
                   3, five, kGradcheck | kGpu),
      softmax_xent("generator_640x30522_T1", m, v, stride, params(sample, 1.0f / 512), 8, generator,
                   kGpu),
      softmax_xent("generator_640x30522_T0.7", m, v, stride, params(sample, 1.0f / 512, 0.7f), 8,
                   generator, kGpu),
      softmax_xent("5x3_stride5", 5, 3, 5, params({4, RngPurpose::kSample, 2, 0}, 1.0f), 2, tiny,
                   kGpu),
      // 16-byte accesses (a stride of a multiple of 8) in the first warp only, the vocabulary
      // ending inside lane 12's 8 columns.
      softmax_xent("5x97_stride104", 5, 97, 104, params({3, RngPurpose::kSample, 1, 0}, 1 / 4.5f),
                   3, five, kGpu),
      softmax_xent("wide_640x30522_T0.3", m, v, stride, params(sample, 1.0f / 512, 0.3f), 60,
                   generator, kGpu),
  };
  // Each at the model's padded stride (16-byte accesses: kernels/softmax_xent.cu) and unpadded
  // (stride 30522: one column a lane), so one run times both paths.
  for (const auto& [name, rows] : {std::pair{"small_128x19", int64_t{128 * 19}},
                                   std::pair{"base_256x79", int64_t{256 * 79}}}) {
    for (const int64_t row_stride : {stride, v}) {
      const std::string shape = row_stride == v ? name : std::string(name) + "_stride30592";
      for (DType dtype : {DType::BF16, DType::F32}) {
        OpCase c =
            softmax_xent(shape, rows, v, row_stride,
                         params({1, RngPurpose::kSample, 0, 0}, 1.0f / rows), 8, weighted, kBench);
        c.bench_dtype = dtype;
        // 64 of the rows: the CPU reference of 20224 rows of 30522 would take minutes.
        c.bench_validation = [=] {
          return softmax_xent("64_rows", 64, v, row_stride,
                              params({1, RngPurpose::kSample, 0, 0}, 1.0f / rows), 8, weighted,
                              kBench);
        };
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

}  // namespace electra::test
