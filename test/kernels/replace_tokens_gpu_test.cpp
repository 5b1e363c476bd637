#include <catch2/catch.hpp>
#include <vector>

#include "kernels/masking.h"
#include "kernels/replace_tokens.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Positions from the masking op (distinct, ragged, with empty slots); samples random, some equal
// to the original. The GPU output must equal the CPU's exactly.
TEST_CASE("replace_tokens on the GPU equals the CPU", "[replace][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("replace", Device::CUDA, 8 << 20);
  const int64_t b = 64, t = 128;
  MaskingParams params;
  params.stream = RngStream{5, RngPurpose::kMasking, 1, 0};
  const int64_t n = max_predictions(params.mask_prob.value, static_cast<int>(t));
  std::vector<int32_t> ids = test::random_ints(b * t, 1, 1000, 1010);
  const std::vector<int32_t> lengths = test::random_ints(b, 2, 2, static_cast<int>(t));
  for (int64_t s = 0; s < b; ++s) {
    for (int64_t i = lengths[s]; i < t; ++i) ids[s * t + i] = params.pad_id;
  }
  std::vector<int32_t> masked(b * t), positions(b * n), original(b * n);
  std::vector<float> weights(b * n);
  mask_tokens(cpu, test::view(ids, {b, t}), params, test::view(masked, {b, t}),
              test::view(positions, {b, n}), test::view(original, {b, n}),
              test::view(weights, {b, n}));
  std::vector<int32_t> samples = test::random_ints(b * n, 3, 1000, 1010);
  std::vector<int32_t> replaced(b * t), labels(b * t);
  replace_tokens(cpu, test::view(ids, {b, t}), test::view(positions, {b, n}),
                 test::view(weights, {b, n}), test::view(samples), test::view(replaced, {b, t}),
                 test::view(labels, {b, t}));
  const Tensor d_replaced = arena.alloc(DType::I32, {b, t});
  const Tensor d_labels = arena.alloc(DType::I32, {b, t});
  poison_tensor(gpu.stream(), d_replaced);
  poison_tensor(gpu.stream(), d_labels);
  replace_tokens(gpu, test::upload(gpu, arena, ids, {b, t}),
                 test::upload(gpu, arena, positions, {b, n}),
                 test::upload(gpu, arena, weights, {b, n}),
                 test::upload(gpu, arena, samples, {b * n}), d_replaced, d_labels);
  CHECK(test::download<int32_t>(gpu, d_replaced) == replaced);
  CHECK(test::download<int32_t>(gpu, d_labels) == labels);
  int64_t replaced_count = 0;
  for (int32_t l : labels) replaced_count += l;
  CHECK(replaced_count > 0);
}
