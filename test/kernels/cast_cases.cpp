// cast (kernels/cast.h) for the op harness (test/common/op_case.h): f32 -> bf16 on the GPU equals
// the CPU bit for bit (round to nearest even), at aligned and unaligned sizes, and bf16 -> f32
// widens exactly; the benchmark casts ELECTRA-Base's parameter buffer (~110M values). No
// gradient: a cast's gradient is the reverse cast. Ties, f32 <-> f64 and refusals: cast_test.cpp.
#include "kernels/cast.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

OpCase cast(const std::string& shape, int64_t n, bool widen_back, unsigned modes) {
  std::vector<TensorSpec> tensors = {input("in", {n}, {.lo = -1e3, .hi = 1e3}, Kind::kF32),
                                     output("out", {n}, Kind::kBF16).bits()};
  if (widen_back) tensors.push_back(output("back", {n}, Kind::kF32).bits());
  return OpCase{
      .op = "cast_f32_bf16",
      .shape = shape,
      .tensors = tensors,
      .forward =
          [widen_back](Context& ctx, const Args& a) {
            run_op(ctx, Cast{.in = a["in"], .out = Out(a["out"])});
            if (widen_back) run_op(ctx, Cast{.in = a["out"], .out = Out(a["back"])});
          },
      .modes = modes,
      // No activation dtype: the tensors' dtypes are the cast's.
      .dtypes = {DType::F32},
      .bench_dtype = DType::F32,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases = {
      cast("1", 1, true, kGpu),
      cast("7", 7, true, kGpu),
      cast("4096", 4096, true, kGpu),
      cast("3_vocabs_plus_5", 30522 * 3 + 5, true, kGpu),
  };
  OpCase bench = cast("110M", 110'000'000, false, kBench);
  // 1M values: the CPU reference and the comparison of 110M take long.
  bench.bench_validation = [] { return cast("1M", 1 << 20, false, kBench); };
  cases.push_back(std::move(bench));
  return cases;
}

}  // namespace electra::test
