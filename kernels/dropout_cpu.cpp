#include "kernels/dropout.h"

#include "kernels/dropout_mask_cpu.h"

namespace electra::cpu {
namespace {

// out[i] = in[i] * keep_i / (1 - p): the forward and the backward are the same map.
template <class T>
void apply_mask(const Tensor& in, const Tensor& out, const DropoutSite& site) {
  apply_dropout_mask(site.stream, site.offset, site.p, in.ptr<T>(), out.ptr<T>(), in.numel());
}

}  // namespace

void dropout_forward(Context&, const Tensor& x, const Tensor& y, const DropoutSite& site) {
  dispatch_cpu_float(x.dtype, "dropout_forward",
                     [&](auto t) { apply_mask<decltype(t)>(x, y, site); });
}

void dropout_backward(Context&, const Tensor& dy, const Tensor& dx, const DropoutSite& site) {
  dispatch_cpu_float(dy.dtype, "dropout_backward",
                     [&](auto t) { apply_mask<decltype(t)>(dy, dx, site); });
}

}  // namespace electra::cpu
