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
  run_op(cpu, MaskTokens{.ids = test::view(ids, {b, t}),
                         .params = params,
                         .masked_ids = Out(test::view(masked, {b, t})),
                         .positions = Out(test::view(positions, {b, n})),
                         .original = Out(test::view(original, {b, n})),
                         .weights = Out(test::view(weights, {b, n}))});
  std::vector<int32_t> samples = test::random_ints(b * n, 3, 1000, 1010);
  std::vector<int32_t> replaced(b * t), labels(b * t);
  run_op(cpu, ReplaceTokens{.ids = test::view(ids, {b, t}),
                            .positions = test::view(positions, {b, n}),
                            .weights = test::view(weights, {b, n}),
                            .samples = test::view(samples),
                            .replaced = Out(test::view(replaced, {b, t})),
                            .labels = Out(test::view(labels, {b, t}))});
  const Tensor d_replaced = arena.alloc(DType::I32, {b, t});
  const Tensor d_labels = arena.alloc(DType::I32, {b, t});
  poison_tensor(gpu.stream(), d_replaced);
  poison_tensor(gpu.stream(), d_labels);
  run_op(gpu, ReplaceTokens{.ids = test::upload(gpu, arena, ids, {b, t}),
                            .positions = test::upload(gpu, arena, positions, {b, n}),
                            .weights = test::upload(gpu, arena, weights, {b, n}),
                            .samples = test::upload(gpu, arena, samples, {b * n}),
                            .replaced = Out(d_replaced),
                            .labels = Out(d_labels)});
  CHECK(test::download<int32_t>(gpu, d_replaced) == replaced);
  CHECK(test::download<int32_t>(gpu, d_labels) == labels);
  int64_t replaced_count = 0;
  for (int32_t l : labels) replaced_count += l;
  CHECK(replaced_count > 0);
}
