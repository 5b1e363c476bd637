#include <catch2/catch.hpp>
#include <vector>

#include "kernels/disc_head.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Loss, dlogits and counts against the CPU on 128 x 128 tokens plus a ragged tail (f32 1e-5,
// bf16 2e-2 on the dlogits, which are stored in bf16), and counts identical run to run. The f32
// dlogits: both sides compute s - y without cancellation (disc_head.h), the CPU within 8 u32 of
// the exact value (bf16_emulation_test), the GPU within 10 u32 (expf is within 2 ulp, not 1),
// so they agree to 18 u32 = 1.1e-6, under 1e-5 (s - y = 1 / (1 + exp(-z)) - y gave 4.8e-5).
TEST_CASE("disc_head on the GPU matches the CPU", "[disc_head][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  const int64_t n = 128 * 128 + 77;
  Arena arena("disc_head", Device::CUDA, 8 << 20);
  std::vector<float> z = test::random_vector<float>(n, 91, -6, 6);
  std::vector<int32_t> labels = test::random_ints(n, 92, 0, 1);
  std::vector<float> weights(n, 1.0f);
  for (int64_t i = 100; i < n; i += 128) weights[i] = 0.0f;
  const float scale = 1.0f / n;
  for (DType dtype : {DType::F32, DType::BF16}) {
    INFO("dtype " << dtype_name(dtype));
    const size_t mark = arena.mark();
    std::vector<float> seen = test::as_dtype(z, dtype);
    std::vector<float> loss(n), dz(n), counts(kDiscCounts);
    run_op(cpu, DiscHead{.logits = Tensor::view_of(seen.data(), Device::CPU, {n}),
                         .labels = Tensor::view_of(labels.data(), Device::CPU, {n}),
                         .weights = Tensor::view_of(weights.data(), Device::CPU, {n}),
                         .scale = scale,
                         .loss = Out(Tensor::view_of(loss.data(), Device::CPU, {n})),
                         .dlogits = Out(Tensor::view_of(dz.data(), Device::CPU, {n})),
                         .counts = Out(Tensor::view_of(counts.data(), Device::CPU, {kDiscCounts})),
                         .workspace = Out(Tensor{})});
    const Tensor logits = test::upload_as(gpu, arena, z, dtype, {n});
    const Tensor dl = test::upload(gpu, arena, labels, {n});
    const Tensor dw = test::upload(gpu, arena, weights, {n});
    const Tensor d_loss = arena.alloc<float>({n});
    const Tensor d_dz = arena.alloc(dtype, {n});
    const Tensor d_counts = arena.alloc<float>({kDiscCounts});
    const Tensor workspace = arena.alloc<float>({disc_head_workspace_size(n)});
    poison_tensor(gpu.stream(), d_loss);
    poison_tensor(gpu.stream(), d_dz);
    poison_tensor(gpu.stream(), d_counts);
    poison_tensor(gpu.stream(), workspace);
    run_op(gpu, DiscHead{.logits = logits,
                         .labels = dl,
                         .weights = dw,
                         .scale = scale,
                         .loss = Out(d_loss),
                         .dlogits = Out(d_dz),
                         .counts = Out(d_counts),
                         .workspace = Out(workspace)});
    const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
    CHECK(test::max_relative_error(test::download<float>(gpu, d_loss), loss) < 1e-5);
    CHECK(test::max_relative_error(test::download_f32(gpu, d_dz), dz) < tol);
    const std::vector<float> got = test::download<float>(gpu, d_counts);
    for (int c = 0; c < kDiscLoss; ++c) CHECK(got[c] == counts[c]);  // integers below 2^24
    CHECK(got[kDiscLoss] == Approx(counts[kDiscLoss]).epsilon(1e-5));
    run_op(gpu, DiscHead{.logits = logits,
                         .labels = dl,
                         .weights = dw,
                         .scale = scale,
                         .loss = Out(d_loss),
                         .dlogits = Out(d_dz),
                         .counts = Out(d_counts),
                         .workspace = Out(workspace)});
    CHECK(test::download<float>(gpu, d_counts) == got);
    arena.rewind(mark);
  }
}
