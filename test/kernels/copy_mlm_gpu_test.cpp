#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/copy_mlm.h"
#include "kernels/softmax_xent.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// softmax_xent then copy_mlm on the GPU against the CPU reference, f32: rows of weight 0, inputs
// equal and unequal to their labels, a padded vocabulary.
TEST_CASE("copy_mlm on the GPU equals the CPU reference", "[copy_mlm][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("copy_mlm", Device::CUDA, 16 << 20);
  const int64_t m = 96, v = 300, stride = 384;
  std::vector<float> logits = test::random_vector<float>(m * stride, 3, -4.0, 4.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = v; j < stride; ++j) logits[i * stride + j] = 0.0f;
  }
  std::vector<float> copy = test::random_vector<float>(m, 4, -3.0, 3.0);
  std::vector<int32_t> labels = test::random_ints(m, 5, 0, v - 1);
  std::vector<int32_t> inputs = test::random_ints(m, 6, 0, v - 1);
  std::vector<float> weights(m, 1.0f);
  for (int64_t i = 0; i < m; ++i) {
    if (i % 3 == 0) inputs[i] = labels[i];  // copies
    if (i % 7 == 0) weights[i] = 0.0f;      // padding
  }
  const float scale = 1.0f / 64;
  SoftmaxXentParams xent;
  xent.vocab = v;
  xent.scale = scale;
  xent.stream = RngStream{2, RngPurpose::kTest, 0, 0};

  std::vector<float> z = logits, c = copy, loss(m);
  std::vector<int32_t> samples(m), top(m);
  const Tensor hz = Tensor::view_of(z.data(), Device::CPU, {m, stride});
  const Tensor hy = Tensor::view_of(labels.data(), Device::CPU, {m});
  const Tensor hw = Tensor::view_of(weights.data(), Device::CPU, {m});
  const Tensor hl = Tensor::view_of(loss.data(), Device::CPU, {m});
  const Tensor ht = Tensor::view_of(top.data(), Device::CPU, {m});
  run_op(cpu, SoftmaxXent{.logits = Out(hz),
                          .labels = hy,
                          .weights = hw,
                          .params = xent,
                          .loss = Out(hl),
                          .sample = Out(Tensor::view_of(samples.data(), Device::CPU, {m})),
                          .argmax = Out(ht)});
  run_op(cpu, CopyMlm{.copy_logits = Tensor::view_of(c.data(), Device::CPU, {m}),
                      .inputs = Tensor::view_of(inputs.data(), Device::CPU, {m}),
                      .labels = hy,
                      .weights = hw,
                      .scale = scale,
                      .xent_loss = Out(hl),
                      .dlogits = Out(hz),
                      .argmax = Out(ht)});

  const Tensor dz = test::upload(gpu, arena, logits, {m, stride});
  const Tensor dc = test::upload(gpu, arena, copy, {m});
  const Tensor dx = test::upload(gpu, arena, inputs, {m});
  const Tensor dy = test::upload(gpu, arena, labels, {m});
  const Tensor dw = test::upload(gpu, arena, weights, {m});
  const Tensor dl = arena.alloc<float>({m});
  const Tensor ds = arena.alloc(DType::I32, {m});
  const Tensor dt = arena.alloc(DType::I32, {m});
  run_op(gpu, SoftmaxXent{.logits = Out(dz),
                          .labels = dy,
                          .weights = dw,
                          .params = xent,
                          .loss = Out(dl),
                          .sample = Out(ds),
                          .argmax = Out(dt)});
  run_op(gpu, CopyMlm{.copy_logits = dc,
                      .inputs = dx,
                      .labels = dy,
                      .weights = dw,
                      .scale = scale,
                      .xent_loss = Out(dl),
                      .dlogits = Out(dz),
                      .argmax = Out(dt)});

  const std::vector<float> g_loss = test::download<float>(gpu, dl);
  const std::vector<float> g_copy = test::download<float>(gpu, dc);
  const std::vector<float> g_z = test::download<float>(gpu, dz);
  CHECK(test::download<int32_t>(gpu, dt) == top);
  for (int64_t i = 0; i < m; ++i) {
    INFO("row " << i);
    CHECK(g_loss[i] == Approx(loss[i]).epsilon(1e-5).margin(1e-6));
    CHECK(g_copy[i] == Approx(c[i]).epsilon(1e-5).margin(1e-8));
  }
  for (int64_t k = 0; k < m * stride; ++k) {
    CHECK(g_z[k] == Approx(z[k]).epsilon(1e-4).margin(1e-9));
  }
}
