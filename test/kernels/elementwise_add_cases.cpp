// elementwise_add (kernels/elementwise_add.h) for the op harness (test/common/op_case.h): the GPU
// equals the CPU bit for bit (one IEEE rounding each) at a single element, a ragged tail and the
// size of a generator word table. No backward (the caller routes the gradient). In place, the f32
// tie and refusals: elementwise_add_test.cpp.
#include "kernels/elementwise_add.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

OpCase elementwise_add(const std::string& shape, int64_t n) {
  return OpCase{
      .op = "elementwise_add",
      .shape = shape,
      // b is small against a, so the sum rounds in most elements.
      .tensors = {param("a", {n}), param("b", {n}, {.lo = -1e-3, .hi = 1e-3}),
                  output("out", {n}, Kind::kParam).bits()},
      .forward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, ElementwiseAdd{.a = a["a"], .b = a["b"], .out = Out(a["out"])});
          },
      .modes = kGpu,
      .dtypes = {DType::F32},
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  return {
      elementwise_add("1", 1),
      elementwise_add("7", 7),
      elementwise_add("vocab_x128_plus_5", 30522 * 128 + 5),
  };
}

}  // namespace electra::test
