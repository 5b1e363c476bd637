#include "kernels/cast.h"

namespace electra::cpu {
namespace {

// Element-wise: tasks of kTaskElements elements.
constexpr int64_t kTaskElements = 65536;

template <class In, class Out, class Convert>
void convert(Context& ctx, const Tensor& in, const Tensor& out, Convert f) {
  const In* x = in.ptr<In>();
  Out* y = out.ptr<Out>();
  ctx.parallel_ranges(in.numel(), kTaskElements, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) y[i] = f(x[i]);
  });
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void Cast::cpu(Context& ctx) const {
  if (in.dtype == DType::F32 && out.dtype == DType::BF16) {
    cpu::convert<float, bf16>(ctx, in, out, [](float x) { return float_to_bf16(x); });
  } else if (in.dtype == DType::BF16 && out.dtype == DType::F32) {
    cpu::convert<bf16, float>(ctx, in, out, [](bf16 x) { return bf16_to_float(x); });
  } else if (in.dtype == DType::F32 && out.dtype == DType::F64) {
    cpu::convert<float, double>(ctx, in, out, [](float x) { return static_cast<double>(x); });
  } else {  // f64 -> f32, the last pair check() lets through
    cpu::convert<double, float>(ctx, in, out, [](double x) { return static_cast<float>(x); });
  }
}

}  // namespace electra
