#include <catch2/catch.hpp>
#include <vector>

#include "kernels/masking.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Every output bit-identical to the CPU for the same stream, at the pre-training shape and at the
// longest sequence, on batches with ragged padding and rows without candidates.
TEST_CASE("masking on the GPU equals the CPU bit for bit", "[masking][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("masking", Device::CUDA, 16 << 20);
  MaskingParams params;
  // The last shape with BERT's corruption (random tokens, the mlm objective).
  const struct {
    int64_t b, t;
    bool bert;
  } shapes[] = {{128, 128, false}, {8, 512, false}, {3, 40, false}, {64, 128, true}};
  for (const auto& shape : shapes) {
    const int64_t b = shape.b, t = shape.t;
    params.mask_token_prob = shape.bert ? 0.8f : 0.85f;
    params.random_token_prob = shape.bert ? 0.1f : 0.0f;
    params.vocab_size = 30522;
    const int64_t n = max_predictions(params.mask_prob.value, static_cast<int>(t));
    INFO("B " << b << " T " << t << (shape.bert ? " BERT" : ""));
    std::vector<int32_t> ids = test::random_ints(b * t, 100 + t, 1000, 30000);
    const std::vector<int32_t> lengths = test::random_ints(b, 200 + t, 2, static_cast<int>(t));
    for (int64_t s = 0; s < b; ++s) {
      int32_t* row = ids.data() + s * t;
      row[0] = params.cls_id;
      row[lengths[s] / 2] = params.sep_id;
      row[lengths[s] - 1] = params.sep_id;
      for (int64_t i = lengths[s]; i < t; ++i) row[i] = params.pad_id;
    }
    params.stream = RngStream{11, RngPurpose::kMasking, static_cast<uint32_t>(t), 0};
    std::vector<int32_t> masked(b * t), positions(b * n), original(b * n);
    std::vector<float> weights(b * n);
    run_op(cpu, MaskTokens{.ids = Tensor::view_of(ids.data(), Device::CPU, {b, t}),
                           .params = params,
                           .masked_ids = Out(Tensor::view_of(masked.data(), Device::CPU, {b, t})),
                           .positions = Out(Tensor::view_of(positions.data(), Device::CPU, {b, n})),
                           .original = Out(Tensor::view_of(original.data(), Device::CPU, {b, n})),
                           .weights = Out(Tensor::view_of(weights.data(), Device::CPU, {b, n}))});
    const size_t mark = arena.mark();
    const Tensor d_ids = test::upload(gpu, arena, ids, {b, t});
    const Tensor d_masked = arena.alloc(DType::I32, {b, t});
    const Tensor d_positions = arena.alloc(DType::I32, {b, n});
    const Tensor d_original = arena.alloc(DType::I32, {b, n});
    const Tensor d_weights = arena.alloc<float>({b, n});
    for (const Tensor* out : {&d_masked, &d_positions, &d_original, &d_weights}) {
      poison_tensor(gpu.stream(), *out);
    }
    run_op(gpu, MaskTokens{.ids = d_ids,
                           .params = params,
                           .masked_ids = Out(d_masked),
                           .positions = Out(d_positions),
                           .original = Out(d_original),
                           .weights = Out(d_weights)});
    CHECK(test::download<int32_t>(gpu, d_masked) == masked);
    CHECK(test::download<int32_t>(gpu, d_positions) == positions);
    CHECK(test::download<int32_t>(gpu, d_original) == original);
    CHECK(test::download<float>(gpu, d_weights) == weights);
    arena.rewind(mark);
  }
}
