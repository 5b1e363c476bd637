#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/softmax_xent.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// The CPU reference on f32 logits (already rounded to bf16 when the GPU gets bf16).
struct Reference {
  std::vector<float> dlogits, loss;
  std::vector<int32_t> sample, argmax;
};

Reference reference(std::vector<float> x, int64_t m, int64_t stride, std::vector<int32_t> labels,
                    std::vector<float> weights, const SoftmaxXentParams& params) {
  Context cpu = Context::cpu();
  Reference r{{}, std::vector<float>(m), std::vector<int32_t>(m), std::vector<int32_t>(m)};
  run_op(cpu, SoftmaxXent{.logits = Out(Tensor::view_of(x.data(), Device::CPU, {m, stride})),
                          .labels = Tensor::view_of(labels.data(), Device::CPU, {m}),
                          .weights = Tensor::view_of(weights.data(), Device::CPU, {m}),
                          .params = params,
                          .loss = Out(Tensor::view_of(r.loss.data(), Device::CPU, {m})),
                          .sample = Out(Tensor::view_of(r.sample.data(), Device::CPU, {m})),
                          .argmax = Out(Tensor::view_of(r.argmax.data(), Device::CPU, {m}))});
  r.dlogits = std::move(x);
  return r;
}

}  // namespace

// Loss and dlogits within the f32 (1e-5) or bf16 (2e-2) tolerance; samples and argmax identical,
// since both sides see the same f32 logits and the same exactly rounded noise.
TEST_CASE("softmax_xent on the GPU matches the CPU at the generator's shape",
          "[softmax_xent][gpu]") {
  Context gpu = Context::cuda(0);
  const int64_t m = 640, v = 30522, stride = 30592;  // padded to a multiple of 128
  Arena arena("softmax_xent", Device::CUDA, size_t{m} * stride * 4 + (16 << 20));
  std::vector<float> x = test::random_vector<float>(m * stride, 71, -8, 8);
  std::vector<int32_t> labels = test::random_ints(m, 72, 0, static_cast<int32_t>(v - 1));
  std::vector<float> weights(m, 1.0f);
  for (int64_t i = 0; i < m; i += 7) weights[i] = 0.0f;  // padding rows,
  for (int64_t i = 3; i < m; i += 7) {                   // some with an invalid, unread label
    weights[i] = 0.0f;
    labels[i] = -1;
  }
  SoftmaxXentParams params;
  params.vocab = v;
  params.scale = 1.0f / 512;
  params.stream = RngStream{17, RngPurpose::kGumbel, 9, 0};
  for (float temperature : {1.0f, 0.7f}) {
    params.temperature = temperature;
    for (DType dtype : {DType::F32, DType::BF16}) {
      INFO("dtype " << dtype_name(dtype) << " temperature " << temperature);
      const size_t mark = arena.mark();
      const Tensor logits = test::upload_as(gpu, arena, x, dtype, {m, stride});
      std::vector<float> seen = test::as_dtype(x, dtype);
      const Reference ref = reference(seen, m, stride, labels, weights, params);
      const Tensor dl = test::upload(gpu, arena, labels, {m});
      const Tensor dw = test::upload(gpu, arena, weights, {m});
      const Tensor loss = arena.alloc<float>({m});
      const Tensor sample = arena.alloc(DType::I32, {m});
      const Tensor argmax = arena.alloc(DType::I32, {m});
      poison_tensor(gpu.stream(), loss);
      poison_tensor(gpu.stream(), sample);
      poison_tensor(gpu.stream(), argmax);
      run_op(gpu, SoftmaxXent{.logits = Out(logits),
                              .labels = dl,
                              .weights = dw,
                              .params = params,
                              .loss = Out(loss),
                              .sample = Out(sample),
                              .argmax = Out(argmax)});
      const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
      CHECK(test::max_relative_error(test::download<float>(gpu, loss), ref.loss) < 1e-5);
      CHECK(test::max_relative_error(test::download_f32(gpu, logits), ref.dlogits) < tol);
      CHECK(test::download<int32_t>(gpu, sample) == ref.sample);
      CHECK(test::download<int32_t>(gpu, argmax) == ref.argmax);
      arena.rewind(mark);
    }
  }
}

TEST_CASE("softmax_xent on the GPU handles tiny odd rows and writes NaN for a bad label",
          "[softmax_xent][gpu]") {
  Context gpu = Context::cuda(0);
  const int64_t m = 5, v = 3, stride = 5;
  Arena arena("softmax_xent", Device::CUDA, 1 << 20);
  std::vector<float> x = test::random_vector<float>(m * stride, 81, -2, 2);
  std::vector<int32_t> labels = {0, 2, 1, 1, 0};
  std::vector<float> weights = {1, 2, 0, 1, 0.5f};
  SoftmaxXentParams params;
  params.vocab = v;
  params.stream = RngStream{4, RngPurpose::kGumbel, 2, 0};
  const Reference ref = reference(x, m, stride, labels, weights, params);
  const Tensor logits = test::upload(gpu, arena, x, {m, stride});
  labels[4] = 3;  // out of the vocabulary: the kernel flags it with NaN
  const Tensor loss = arena.alloc<float>({m});
  const Tensor sample = arena.alloc(DType::I32, {m});
  const Tensor argmax = arena.alloc(DType::I32, {m});
  poison_tensor(gpu.stream(), loss);
  run_op(gpu, SoftmaxXent{.logits = Out(logits),
                          .labels = test::upload(gpu, arena, labels, {m}),
                          .weights = test::upload(gpu, arena, weights, {m}),
                          .params = params,
                          .loss = Out(loss),
                          .sample = Out(sample),
                          .argmax = Out(argmax)});
  const std::vector<float> got = test::download<float>(gpu, loss);
  for (int64_t i = 0; i < 4; ++i) CHECK(got[i] == Approx(ref.loss[i]).epsilon(1e-5));
  CHECK(std::isnan(got[4]));
  CHECK(test::download<int32_t>(gpu, sample) == ref.sample);
  CHECK(test::download<int32_t>(gpu, argmax) == ref.argmax);
  const std::vector<float> d = test::download<float>(gpu, logits);
  for (int64_t i = 0; i < 4 * stride; ++i)
    CHECK(d[i] == Approx(ref.dlogits[i]).epsilon(1e-5).margin(1e-7));
}
