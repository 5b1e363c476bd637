// masking (kernels/masking.h) for the op harness (test/common/op_case.h): every output equal to
// the CPU's bit for bit for the same stream, at the pre-training shape and the longest sequence,
// on batches with ragged padding and rows without candidates, with ELECTRA's corruption and with
// BERT's (random tokens); benchmarks at B = 128, T = 128 and B = 32, T = 512. Hand values, rates
// and refusals: masking_test.cpp.
#include "kernels/masking.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

// Token ids in [1000, 30000]; each row [CLS] ... [SEP] ... [SEP] then padding, its length uniform
// in [min_length, T] (at 2, a row has no candidate).
Fill rows_of_tokens(int64_t b, int64_t t, int32_t min_length) {
  return {.make = [b, t, min_length](size_t n, uint64_t seed) {
    const MaskingParams ids;  // the special ids
    std::vector<int32_t> tokens = random_ints(n, seed, 1000, 30000);
    const std::vector<int32_t> lengths =
        random_ints(b, seed + 1, min_length, static_cast<int32_t>(t));
    for (int64_t s = 0; s < b; ++s) {
      int32_t* row = tokens.data() + s * t;
      row[0] = ids.cls_id;
      row[lengths[s] / 2] = ids.sep_id;
      row[lengths[s] - 1] = ids.sep_id;
      for (int64_t i = lengths[s]; i < t; ++i) row[i] = ids.pad_id;
    }
    return std::vector<double>(tokens.begin(), tokens.end());
  }};
}

OpCase masking(const std::string& shape, int64_t b, int64_t t, bool bert, int32_t min_length,
               unsigned modes) {
  const int64_t n = max_predictions(MaskingParams{}.mask_prob.value, static_cast<int>(t));
  auto params = [bert, t](const Context& ctx) {
    MaskingParams p;
    p.mask_token_prob = bert ? 0.8f : 0.85f;
    p.random_token_prob = bert ? 0.1f : 0.0f;
    p.vocab_size = 30522;
    p.stream = ctx.rng(RngPurpose::kMasking, static_cast<uint32_t>(t));
    return p;
  };
  return OpCase{
      .op = "masking",
      .shape = shape,
      .tensors = {input("ids", {b, t}, rows_of_tokens(b, t, min_length), Kind::kI32),
                  output("masked_ids", {b, t}, Kind::kI32).bits(),
                  output("positions", {b, n}, Kind::kI32).bits(),
                  output("original", {b, n}, Kind::kI32).bits(),
                  output("weights", {b, n}, Kind::kF32).bits()},
      .forward =
          [params](Context& ctx, const Args& a) {
            run_op(ctx, MaskTokens{.ids = a["ids"],
                                   .params = params(ctx),
                                   .masked_ids = Out(a["masked_ids"]),
                                   .positions = Out(a["positions"]),
                                   .original = Out(a["original"]),
                                   .weights = Out(a["weights"])});
          },
      .modes = modes,
      // No activation dtype: ids, positions and weights have the op's dtypes.
      .dtypes = {DType::F32},
      .seed = 11,
      .bench_dtype = DType::F32,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  return {
      masking("128x128", 128, 128, false, 2, kGpu),
      masking("8x512", 8, 512, false, 2, kGpu),
      masking("3x40", 3, 40, false, 2, kGpu),
      masking("64x128_bert", 64, 128, true, 2, kGpu),
      masking("128x128", 128, 128, false, 8, kBench),
      masking("32x512", 32, 512, false, 8, kBench),
  };
}

}  // namespace electra::test
