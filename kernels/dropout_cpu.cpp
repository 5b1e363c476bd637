#include "kernels/dropout.h"

#include "kernels/dropout_mask_cpu.h"

namespace electra {
namespace {

// Elements per task: a multiple of apply_dropout_mask's chunk (the mask is a pure function of the
// element index, so any split gives the same bits).
constexpr int64_t kTaskElements = 16384;

}  // namespace

// y[i] = x[i] * keep_i / (1 - p).
void Dropout::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto t) {
    using T = decltype(t);
    ctx.parallel_ranges(x.numel(), kTaskElements, [&](int64_t i0, int64_t i1) {
      cpu::apply_dropout_mask(site.stream, site.offset + static_cast<uint64_t>(i0), site.p,
                              x.ptr<T>() + i0, y.ptr<T>() + i0, i1 - i0);
    });
  });
}

}  // namespace electra
