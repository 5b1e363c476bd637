#include <catch2/catch.hpp>
#include <vector>

#include "kernels/reinforce.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Every output against the CPU reference on 64 x 7 slots over a 1000-word vocabulary padded to
// 1024 (f32 1e-5; bf16 2e-2 on what is stored in bf16), the scale read from device memory.
TEST_CASE("reinforce on the GPU matches the CPU", "[reinforce][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  const int64_t b = 64, n = 7, t = 32, v = 1000, stride = 1024, m = b * n;
  Arena arena("reinforce", Device::CUDA, 16 << 20);
  std::vector<float> p = test::random_vector<float>(m * stride, 31, 0.0, 1.0);
  const std::vector<int32_t> labels = test::random_ints(m, 32, 0, v - 1);
  std::vector<int32_t> samples = test::random_ints(m, 33, 0, v - 1);
  for (int64_t i = 0; i < m; i += 5) samples[i] = labels[i];
  std::vector<float> weights(m, 1.0f);
  for (int64_t i = 3; i < m; i += 11) weights[i] = 0.0f;
  const std::vector<int32_t> positions = test::random_ints(m, 34, 0, t - 1);
  std::vector<float> token_loss = test::random_vector<float>(b * t, 35, 0.01, 4.0);
  const std::vector<float> u = test::random_vector<float>(m, 36, -4, 4);
  // A plausible gradient row: w (p - e_y), padding 0.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < stride; ++j) {
      float& x = p[i * stride + j];
      x = j >= v ? 0.0f : weights[i] * (x / v - (j == labels[i] ? 1.0f : 0.0f));
    }
  }
  const float scale = 0.125f;
  const Tensor scale_at = test::upload(gpu, arena, std::vector<float>{scale}, {1});
  for (DType dtype : {DType::F32, DType::BF16}) {
    INFO("dtype " << dtype_name(dtype));
    const size_t mark = arena.mark();
    std::vector<float> dz = test::as_dtype(p, dtype), du(m), ur = test::as_dtype(u, dtype);
    std::vector<float> reward(m), adv(m), lp(m), bl(m);
    ReinforceParams params;
    params.vocab = v;
    params.scale = scale;
    run_op(
        cpu,
        Reinforce{.dlogits = Out(Tensor::view_of(dz.data(), Device::CPU, {m, stride})),
                  .labels = Tensor::view_of(const_cast<int32_t*>(labels.data()), Device::CPU, {m}),
                  .samples = Tensor::view_of(samples.data(), Device::CPU, {m}),
                  .weights = Tensor::view_of(weights.data(), Device::CPU, {m}),
                  .token_loss = Tensor::view_of(token_loss.data(), Device::CPU, {b * t}),
                  .positions =
                      Tensor::view_of(const_cast<int32_t*>(positions.data()), Device::CPU, {b, n}),
                  .baseline = Tensor::view_of(ur.data(), Device::CPU, {m}),
                  .params = params,
                  .baseline_grad = Out(Tensor::view_of(du.data(), Device::CPU, {m})),
                  .out = ReinforceSlots{Tensor::view_of(reward.data(), Device::CPU, {m}),
                                        Tensor::view_of(adv.data(), Device::CPU, {m}),
                                        Tensor::view_of(lp.data(), Device::CPU, {m}),
                                        Tensor::view_of(bl.data(), Device::CPU, {m})}});
    const Tensor d_dz = test::upload_as(gpu, arena, p, dtype, {m, stride});
    const Tensor d_u = test::upload_as(gpu, arena, u, dtype, {m});
    ReinforceSlots out{arena.alloc<float>({m}), arena.alloc<float>({m}), arena.alloc<float>({m}),
                       arena.alloc<float>({m})};
    for (const Tensor* x : {&out.reward, &out.advantage, &out.log_prob, &out.baseline_loss}) {
      poison_tensor(gpu.stream(), *x);
    }
    params.scale = DeviceScalar<float>::in(scale_at.ptr<float>());
    // The baseline's gradient in place of its logit (the aliasing the contract allows).
    run_op(gpu, Reinforce{.dlogits = Out(d_dz),
                          .labels = test::upload(gpu, arena, labels, {m}),
                          .samples = test::upload(gpu, arena, samples, {m}),
                          .weights = test::upload(gpu, arena, weights, {m}),
                          .token_loss = test::upload(gpu, arena, token_loss, {b * t}),
                          .positions = test::upload(gpu, arena, positions, {b, n}),
                          .baseline = d_u,
                          .params = params,
                          .baseline_grad = Out(d_u),
                          .out = out});
    const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
    CHECK(test::max_relative_error(test::download_f32(gpu, d_dz), dz) < tol);
    CHECK(test::max_relative_error(test::download_f32(gpu, d_u), du) < tol);
    CHECK(test::max_relative_error(test::download<float>(gpu, out.reward), reward) < 1e-6);
    CHECK(test::max_relative_error(test::download<float>(gpu, out.advantage), adv) < 1e-5);
    CHECK(test::max_relative_error(test::download<float>(gpu, out.log_prob), lp) < 1e-5);
    CHECK(test::max_relative_error(test::download<float>(gpu, out.baseline_loss), bl) < 1e-5);
    arena.rewind(mark);
  }
}
