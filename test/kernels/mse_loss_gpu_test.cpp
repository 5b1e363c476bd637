// mse_loss on the GPU in place, dpredictions over the predictions (a check the op harness cannot
// express; parity with the CPU: mse_loss_cases.cpp): the same values as the CPU writing apart.
#include <catch2/catch.hpp>

#include "kernels/mse_loss.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Named as the harness's GPU tests are: <op>/<what>/<dtype>.
TEST_CASE("mse_loss/in_place/f32_and_bf16", "[mse_loss][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  const int64_t n = 3 * 256 + 37;
  Arena arena("mse_loss", Device::CUDA, 1 << 20);
  const std::vector<float> p = test::random_vector<float>(n, 51, -3, 3);
  std::vector<float> targets = test::random_vector<float>(n, 52, 0, 1);
  std::vector<float> weights(n, 1.0f);
  for (int64_t i = 9; i < n; i += 64) weights[i] = 0.0f;
  const float scale = 1.0f / n;
  for (DType dtype : {DType::F32, DType::BF16}) {
    INFO("dtype " << dtype_name(dtype));
    const size_t mark = arena.mark();
    std::vector<float> seen = test::as_dtype(p, dtype), loss(n), dp(n);
    run_op(cpu, MseLoss{.predictions = test::view(seen),
                        .targets = test::view(targets),
                        .weights = test::view(weights),
                        .scale = scale,
                        .loss = Out(test::view(loss)),
                        .dpredictions = Out(test::view(dp))});
    const Tensor d_p = test::upload_as(gpu, arena, p, dtype, {n});
    const Tensor d_loss = arena.alloc<float>({n});
    run_op(gpu, MseLoss{.predictions = d_p,
                        .targets = test::upload(gpu, arena, targets, {n}),
                        .weights = test::upload(gpu, arena, weights, {n}),
                        .scale = scale,
                        .loss = Out(d_loss),
                        .dpredictions = Out(d_p)});
    // f32: the same products in the same order; bf16: dpredictions rounded once (2^-9).
    CHECK(test::max_relative_error(test::download_f32(gpu, d_p), dp) <
          (dtype == DType::F32 ? 1e-7 : 2e-2));
    arena.rewind(mark);
  }
}
