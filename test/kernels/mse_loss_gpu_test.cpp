// mse_loss on the GPU against the CPU reference (exits 77 without a GPU: gpu_main).
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/mse_loss.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Loss and dpredictions against the CPU on a ragged number of rows (f32 equal to the CPU bit for
// bit: the same products in the same order; bf16 predictions within 2e-2), in place as well.
TEST_CASE("mse_loss on the GPU matches the CPU", "[mse_loss][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  const int64_t n = 3 * 256 + 37;
  Arena arena("mse_loss", Device::CUDA, 1 << 20);
  const std::vector<float> p = test::random_vector<float>(n, 51, -3, 3);
  const std::vector<float> targets = test::random_vector<float>(n, 52, 0, 1);
  std::vector<float> weights(n, 1.0f);
  for (int64_t i = 9; i < n; i += 64) weights[i] = 0.0f;
  const float scale = 1.0f / n;
  for (DType dtype : {DType::F32, DType::BF16}) {
    INFO("dtype " << dtype_name(dtype));
    const size_t mark = arena.mark();
    std::vector<float> seen = test::as_dtype(p, dtype);
    std::vector<float> y = targets, w = weights;
    std::vector<float> loss(n), dp(n);
    run_op(cpu, MseLoss{.predictions = test::view(seen),
                        .targets = test::view(y),
                        .weights = test::view(w),
                        .scale = scale,
                        .loss = Out(test::view(loss)),
                        .dpredictions = Out(test::view(dp))});
    const Tensor d_p = test::upload_as(gpu, arena, p, dtype, {n});
    const Tensor d_y = test::upload(gpu, arena, targets, {n});
    const Tensor d_w = test::upload(gpu, arena, weights, {n});
    const Tensor d_loss = arena.alloc<float>({n});
    const Tensor d_dp = arena.alloc(dtype, {n});
    poison_tensor(gpu.stream(), d_loss);
    poison_tensor(gpu.stream(), d_dp);
    run_op(gpu, MseLoss{.predictions = d_p,
                        .targets = d_y,
                        .weights = d_w,
                        .scale = scale,
                        .loss = Out(d_loss),
                        .dpredictions = Out(d_dp)});
    if (dtype == DType::F32) {
      CHECK(test::download<float>(gpu, d_loss) == loss);
      CHECK(test::download<float>(gpu, d_dp) == dp);
    } else {
      CHECK(test::max_relative_error(test::download<float>(gpu, d_loss), loss) < 1e-5);
      CHECK(test::max_relative_error(test::download_f32(gpu, d_dp), dp) < 2e-2);
    }
    // In place: dpredictions over the predictions.
    run_op(gpu, MseLoss{.predictions = d_p,
                        .targets = d_y,
                        .weights = d_w,
                        .scale = scale,
                        .loss = Out(d_loss),
                        .dpredictions = Out(d_p)});
    CHECK(test::max_relative_error(test::download_f32(gpu, d_p), dp) <
          (dtype == DType::F32 ? 1e-7 : 2e-2));
    arena.rewind(mark);
  }
}
