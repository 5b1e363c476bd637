#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "kernels/step_scalars.h"
#include "kernels/unigram_sample.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// The kernel draws exactly the CPU's samples, with the step read from device memory (the step
// scalars' micro-step) as in a training step.
TEST_CASE("unigram_sample on the GPU equals the CPU", "[unigram][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("unigram", Device::CUDA, 8 << 20);
  std::vector<uint64_t> counts(30522);
  const std::vector<int32_t> raw = test::random_ints(counts.size(), 9, 0, 100000);
  for (size_t v = 0; v < counts.size(); ++v)
    counts[v] = v % 7 == 0 ? 0 : static_cast<uint64_t>(raw[v]);
  std::vector<double> cdf = unigram_cdf(counts);
  const int64_t m = 128 * 20;
  for (uint32_t step : {0u, 5u, 1000003u}) {
    std::vector<int32_t> expected(static_cast<size_t>(m));
    run_op(cpu, UnigramSample{.cdf = test::view(cdf),
                              .stream = RngStream{3, RngPurpose::kGumbel, step, 0},
                              .samples = Out(test::view(expected))});
    StepScalars s;
    s.micro_step = step;
    std::vector<int32_t> words(kStepScalarWords);
    std::memcpy(words.data(), &s, sizeof(s));
    const Tensor block = test::upload(gpu, arena, words, {kStepScalarWords});
    RngStream stream{3, RngPurpose::kGumbel, 0, 0};
    stream.step_at = micro_step_at(block);
    const Tensor d_samples = arena.alloc(DType::I32, {m});
    poison_tensor(gpu.stream(), d_samples);
    run_op(gpu,
           UnigramSample{.cdf = test::upload(gpu, arena, cdf, {static_cast<int64_t>(cdf.size())}),
                         .stream = stream,
                         .samples = Out(d_samples)});
    CHECK(test::download<int32_t>(gpu, d_samples) == expected);
  }
}
