// CPU reference of mse_loss (kernels/mse_loss.h): one loop, templated on f32/f64.
#include "kernels/mse_loss.h"

namespace electra::cpu {
namespace {

template <class T>
void run(const Tensor& predictions, const Tensor& targets, const Tensor& weights, float scale,
         const Tensor& loss, const Tensor& dpredictions) {
  const int64_t n = predictions.numel();
  const T* p = predictions.ptr<T>();
  const float* y = targets.ptr<float>();
  const float* w = weights.ptr<float>();
  T* out_loss = loss.ptr<T>();
  T* dp = dpredictions.ptr<T>();
  for (int64_t i = 0; i < n; ++i) {
    const T diff = p[i] - static_cast<T>(y[i]);
    const T wi = static_cast<T>(w[i]);
    out_loss[i] = wi * diff * diff;
    dp[i] = T{2} * wi * static_cast<T>(scale) * diff;
  }
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void MseLoss::cpu(Context&) const {
  check_dtype(loss, predictions.dtype, "mse_loss (cpu) loss");
  dispatch_cpu_float(predictions.dtype, kName, [&](auto zero) {
    using T = decltype(zero);
    cpu::run<T>(predictions, targets, weights, scale, loss, dpredictions);
  });
}

}  // namespace electra
