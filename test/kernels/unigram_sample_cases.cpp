// unigram_sample (kernels/unigram_sample.h) for the op harness (test/common/op_case.h), GPU only
// (no gradient flows through a sample): the kernel draws exactly the CPU's samples from a
// 30522-token table with every 7th count 0, for 128 x 20 slots, with the stream's step read from a
// step-scalars block (kernels/step_scalars.h) as in a training step, at steps 0, 5 and 1000003.
// The distribution (chi-square), zero counts, the keying by the stream and unigram_cdf:
// unigram_sample_test.cpp.
#include <cstring>

#include "kernels/step_scalars.h"
#include "kernels/unigram_sample.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

OpCase unigram_sample(const std::vector<double>& cdf, uint32_t step, int64_t m) {
  StepScalars scalars;
  scalars.micro_step = step;
  std::vector<int32_t> words(kStepScalarWords, 0);
  std::memcpy(words.data(), &scalars, sizeof(scalars));
  return OpCase{
      .op = "unigram_sample",
      .shape =
          std::to_string(m) + "_of_" + std::to_string(cdf.size()) + "_step" + std::to_string(step),
      .tensors = {input("cdf", {static_cast<int64_t>(cdf.size())}, fixed(cdf), Kind::kF64)
                      .any_shape("any vocabulary size: its length is V"),
                  input("step_scalars", {kStepScalarWords}, fixed({words.begin(), words.end()}),
                        Kind::kI32),
                  // Integer and exact f64 comparisons only.
                  output("samples", {m}, Kind::kI32).bits().any_shape("any number M of draws")},
      .forward =
          [](Context& ctx, const Args& a) {
            RngStream stream{3, RngPurpose::kSample, 0, 0};
            stream.step_at = micro_step_at(a["step_scalars"]);
            run_op(ctx,
                   UnigramSample{.cdf = a["cdf"], .stream = stream, .samples = Out(a["samples"])});
          },
      .modes = kGpu,
      .dtypes = {DType::F32},  // no activation: the dtypes are the op's
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<uint64_t> counts(30522);
  const std::vector<int32_t> raw = random_ints(counts.size(), 9, 0, 100000);
  for (size_t v = 0; v < counts.size(); ++v) {
    counts[v] = v % 7 == 0 ? 0 : static_cast<uint64_t>(raw[v]);
  }
  const std::vector<double> cdf = unigram_cdf(counts);
  std::vector<OpCase> cases;
  for (uint32_t step : {0u, 5u, 1000003u}) cases.push_back(unigram_sample(cdf, step, 128 * 20));
  return cases;
}

}  // namespace electra::test
