// replace_tokens (kernels/replace_tokens.h) for the op harness (test/common/op_case.h): on
// positions from the masking op (distinct, ragged, with empty slots) and random samples, some
// equal to the original, the GPU's replaced ids and labels equal the CPU's exactly. Hand values
// and refusals: replace_tokens_test.cpp.
#include "kernels/masking.h"
#include "kernels/replace_tokens.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

// Ids in [1000, 1010] (samples from the same range often equal the original), padding after a
// random length in [2, T].
Fill padded_rows(int64_t b, int64_t t) {
  return {.make = [b, t](size_t n, uint64_t seed) {
    std::vector<int32_t> ids = random_ints(n, seed, 1000, 1010);
    const std::vector<int32_t> lengths = random_ints(b, seed + 1, 2, static_cast<int32_t>(t));
    for (int64_t s = 0; s < b; ++s) {
      for (int64_t i = lengths[s]; i < t; ++i) ids[s * t + i] = MaskingParams{}.pad_id;
    }
    return std::vector<double>(ids.begin(), ids.end());
  }};
}

OpCase replace_tokens(const std::string& shape, int64_t b, int64_t t) {
  const int64_t n = max_predictions(MaskingParams{}.mask_prob.value, static_cast<int>(t));
  return OpCase{
      .op = "replace_tokens",
      .shape = shape,
      .tensors = {input("ids", {b, t}, padded_rows(b, t), Kind::kI32),
                  input("samples", {b * n}, {.lo = 1000, .hi = 1010}, Kind::kI32),
                  // The masking op's outputs: the positions replace_tokens reads.
                  output("masked_ids", {b, t}, Kind::kI32).bits(),
                  output("positions", {b, n}, Kind::kI32).bits(),
                  output("original", {b, n}, Kind::kI32).bits(),
                  output("weights", {b, n}, Kind::kF32).bits(),
                  output("replaced", {b, t}, Kind::kI32).bits(),
                  // Some samples differ from the original: some labels are 1.
                  output("labels", {b, t}, Kind::kI32).bits().nonzero()},
      .forward =
          [](Context& ctx, const Args& a) {
            MaskingParams params;
            params.stream = ctx.rng(RngPurpose::kMasking, 1);
            run_op(ctx, MaskTokens{.ids = a["ids"],
                                   .params = params,
                                   .masked_ids = Out(a["masked_ids"]),
                                   .positions = Out(a["positions"]),
                                   .original = Out(a["original"]),
                                   .weights = Out(a["weights"])});
            run_op(ctx, ReplaceTokens{.ids = a["ids"],
                                      .positions = a["positions"],
                                      .weights = a["weights"],
                                      .samples = a["samples"],
                                      .replaced = Out(a["replaced"]),
                                      .labels = Out(a["labels"])});
          },
      .modes = kGpu,
      // No activation dtype: ids, positions and weights have the ops' dtypes.
      .dtypes = {DType::F32},
      .seed = 5,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  return {replace_tokens("64x128", 64, 128)};
}

}  // namespace electra::test
