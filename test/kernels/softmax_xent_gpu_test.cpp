// softmax_xent on the GPU with a weighted row's label outside the vocabulary: its loss is NaN, the
// other rows' finite; and rows the harness's random fills never make (no finite logit, a NaN at
// column 0, one finite logit, a +inf) sample and argmax as the CPU reference does (checks the op
// harness cannot express; parity with the CPU: softmax_xent_cases.cpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/softmax_xent.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Named as the harness's GPU tests are: <op>/<what>/<dtype>.
TEST_CASE("softmax_xent/bad_label_gives_nan_loss/f32", "[softmax_xent][gpu]") {
  Context gpu = Context::cuda(0);
  const int64_t m = 5, v = 3, stride = 5;
  Arena arena("softmax_xent", Device::CUDA, 1 << 20);
  std::vector<float> x = test::random_vector<float>(m * stride, 81, -2, 2);
  std::vector<int32_t> labels = {0, 2, 1, 1, 3};  // row 4: out of the vocabulary
  std::vector<float> weights = {1, 2, 0, 1, 0.5f};
  SoftmaxXentParams params;
  params.vocab = v;
  params.stream = RngStream{4, RngPurpose::kSample, 2, 0};
  const Tensor loss = arena.alloc<float>({m});
  poison_tensor(gpu.stream(), loss);
  run_op(gpu, SoftmaxXent{.logits = Out(test::upload(gpu, arena, x, {m, stride})),
                          .labels = test::upload(gpu, arena, labels, {m}),
                          .weights = test::upload(gpu, arena, weights, {m}),
                          .params = params,
                          .loss = Out(loss),
                          .sample = Out(arena.alloc(DType::I32, {m})),
                          .argmax = Out(arena.alloc(DType::I32, {m}))});
  const std::vector<float> got = test::download<float>(gpu, loss);
  for (int64_t i = 0; i < 4; ++i) CHECK(std::isfinite(got[i]));
  CHECK(std::isnan(got[4]));
}

// Row 0: no finite logit (sample = argmax = 0); row 1: NaN at column 0 (argmax 0, never sampled);
// row 2: one finite logit, not in the first warp's columns (V = 700: warps own 64 columns at a
// stride of 700, one column a lane; 256 at a stride of 704, 8 a lane); row 3: a +inf (sample =
// argmax = its column); row 4: NaN and -inf among ordinary logits, every column past 600 -inf (the
// last warps weigh nothing); 8 steps each, at both strides (the padding columns hold ordinary
// logits, which must not count).
TEST_CASE("softmax_xent/special_rows_sample_as_the_cpu/f32", "[softmax_xent][gpu]") {
  Context gpu = Context::cuda(0), cpu = Context::cpu();
  const int64_t m = 5, v = 700;
  const float inf = INFINITY, nan = std::nanf("");
  for (const int64_t stride : {v, int64_t{704}}) {
    INFO("stride " << stride);
    std::vector<float> x = test::random_vector<float>(m * stride, 82, -3, 3);
    for (int64_t j = 0; j < v; ++j) {
      x[j] = -inf;
      x[2 * stride + j] = -inf;
      if (j >= 600) x[4 * stride + j] = -inf;
    }
    x[stride] = nan;
    x[2 * stride + 300] = 1.5f;
    x[3 * stride + 333] = inf;
    x[4 * stride + 7] = nan;
    x[4 * stride + 8] = -inf;
    const std::vector<int32_t> labels(m, 0);
    const std::vector<float> weights(m, 0.0f);  // no loss: only the sample and the argmax
    for (uint32_t step = 0; step < 8; ++step) {
      INFO("step " << step);
      SoftmaxXentParams params;
      params.vocab = v;
      params.stream = RngStream{6, RngPurpose::kSample, step, 0};
      auto run = [&](Context& ctx) {
        Arena arena("softmax_xent", ctx.device(), 1 << 20);
        const Tensor sample = arena.alloc(DType::I32, {m}), argmax = arena.alloc(DType::I32, {m});
        poison_tensor(ctx.stream(), sample);
        poison_tensor(ctx.stream(), argmax);
        run_op(ctx, SoftmaxXent{.logits = Out(test::upload(ctx, arena, x, {m, stride})),
                                .labels = test::upload(ctx, arena, labels, {m}),
                                .weights = test::upload(ctx, arena, weights, {m}),
                                .params = params,
                                .loss = Out(arena.alloc<float>({m})),
                                .sample = Out(sample),
                                .argmax = Out(argmax)});
        return std::make_pair(test::download<int32_t>(ctx, sample),
                              test::download<int32_t>(ctx, argmax));
      };
      const auto want = run(cpu), got = run(gpu);
      CHECK(want.first[0] == 0);
      CHECK(want.first[2] == 300);
      CHECK(want.first[3] == 333);
      CHECK(want.second == std::vector<int32_t>{0, 0, 300, 333, want.second[4]});
      CHECK(got.first == want.first);
      CHECK(got.second == want.second);
    }
  }
}
