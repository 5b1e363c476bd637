// softmax_xent on the GPU with a weighted row's label outside the vocabulary: its loss is NaN, the
// other rows' finite (a check the op harness cannot express; parity with the CPU:
// softmax_xent_cases.cpp).
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
  params.stream = RngStream{4, RngPurpose::kGumbel, 2, 0};
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
