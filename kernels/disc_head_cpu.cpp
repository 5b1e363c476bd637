#include <cmath>

#include "kernels/disc_head.h"

namespace electra::cpu {
namespace {

template <class T>
void run(const Tensor& logits, const Tensor& labels, const Tensor& weights, float scale,
         const Tensor& loss, const Tensor& dlogits, const Tensor& counts) {
  const int64_t n = logits.numel();
  const T* z = logits.ptr<T>();
  const int32_t* y = labels.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  T* out_loss = loss.ptr<T>();
  T* dz = dlogits.ptr<T>();
  double sums[kDiscCounts] = {};
  for (int64_t i = 0; i < n; ++i) {
    const T zi = z[i], wi = static_cast<T>(w[i]);
    const T yi = y[i] == 1 ? T{1} : T{0};
    const T e = std::exp(-std::abs(zi));
    const T l = wi * (std::max(zi, T{0}) - yi * zi + std::log1p(e));
    const bool predicted = zi > 0, actual = y[i] == 1;
    // s - y without cancellation (disc_head.h).
    const T ds = (actual ? T{-1} : T{1}) * (predicted != actual ? T{1} : e) / (T{1} + e);
    out_loss[i] = l;
    dz[i] = wi * static_cast<T>(scale) * ds;
    sums[kDiscCorrect] += predicted == actual ? wi : 0;
    sums[kDiscTruePositive] += predicted && actual ? wi : 0;
    sums[kDiscPredictedPositive] += predicted ? wi : 0;
    sums[kDiscActualPositive] += actual ? wi : 0;
    sums[kDiscWeight] += wi;
    sums[kDiscLoss] += l;
  }
  T* out_counts = counts.ptr<T>();
  for (int k = 0; k < kDiscCounts; ++k) out_counts[k] = static_cast<T>(sums[k]);
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void DiscHead::cpu(Context&) const {
  dispatch_cpu_float(logits.dtype, kName, [&](auto zero) {
    using T = decltype(zero);
    cpu::run<T>(logits, labels, weights, scale.get(), loss, dlogits, counts);
  });
}

}  // namespace electra
