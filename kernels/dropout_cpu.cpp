#include "kernels/dropout.h"

namespace electra::cpu {
namespace {

// 1 / (1 - p) in the precision of T (f32 exactly as the GPU computes it).
template <class T>
T survivor_scale(float p) {
  return T{1} / (T{1} - static_cast<T>(p));
}

// out[i] = in[i] * keep_i * scale: the forward and the backward are the same map.
template <class T>
void apply_mask(const Tensor& in, const Tensor& out, const DropoutSite& site) {
  const T* x = in.ptr<T>();
  T* y = out.ptr<T>();
  const T scale = survivor_scale<T>(site.p);
  const int64_t n = in.numel();
  RngBlockCache rng{site.stream};
  for (int64_t i = 0; i < n; ++i) {
    y[i] = dropout_keep(rng, site.offset + static_cast<uint64_t>(i), site.p) ? x[i] * scale : T{0};
  }
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
