#include "kernels/dropout.h"

#include "kernels/dropout_mask_cpu.h"

namespace electra::cpu {
namespace {

// Elements per task: a multiple of apply_dropout_mask's chunk (the mask is a pure function of the
// element index, so any split gives the same bits).
constexpr int64_t kTaskElements = 16384;

// out[i] = in[i] * keep_i / (1 - p): the forward and the backward are the same map.
template <class T>
void apply_mask(Context& ctx, const Tensor& in, const Tensor& out, const DropoutSite& site) {
  ctx.parallel_ranges(in.numel(), kTaskElements, [&](int64_t i0, int64_t i1) {
    apply_dropout_mask(site.stream, site.offset + static_cast<uint64_t>(i0), site.p,
                       in.ptr<T>() + i0, out.ptr<T>() + i0, i1 - i0);
  });
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void DropoutForward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName,
                     [&](auto t) { cpu::apply_mask<decltype(t)>(ctx, x, y, site); });
}

void DropoutBackward::cpu(Context& ctx) const {
  dispatch_cpu_float(dy.dtype, kName,
                     [&](auto t) { cpu::apply_mask<decltype(t)>(ctx, dy, dx, site); });
}

}  // namespace electra
