#include "kernels/elementwise_add.h"

namespace electra::cpu {
namespace {

// Element-wise: tasks of kTaskElements elements.
constexpr int64_t kTaskElements = 65536;

}  // namespace

}  // namespace electra::cpu

namespace electra {

void ElementwiseAdd::cpu(Context& ctx) const {
  dispatch_cpu_float(out.dtype, kName, [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.ptr<T>();
    const T* y = b.ptr<T>();
    T* z = out.ptr<T>();
    ctx.parallel_ranges(out.numel(), cpu::kTaskElements, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) z[i] = x[i] + y[i];
    });
  });
}

}  // namespace electra
