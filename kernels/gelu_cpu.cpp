#include <cmath>
#include <numbers>

#include "kernels/gelu.h"

namespace electra::cpu {
namespace {

// Phi(u) = 0.5 erfc(-u / sqrt 2): erfc keeps full relative accuracy in the left tail, where
// 1 + erf(u / sqrt 2) would cancel.
template <class T>
T normal_cdf(T u) {
  return T{0.5} * std::erfc(-u * static_cast<T>(std::numbers::sqrt2 / 2));
}

template <class T>
T gelu(T u) {
  return u * normal_cdf(u);
}

template <class T>
T gelu_grad(T u) {
  const T pdf =
      std::exp(T{-0.5} * u * u) * static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
  return normal_cdf(u) + u * pdf;
}

// dx[r, j] = dy[r, j] * gelu'(x[r, j] + b[j]) (b null: x is already u); db[j] += sum_r dx[r, j].
template <class T>
void backward(const Tensor& dy, const Tensor& x, const T* b, const Tensor& dx, const Tensor& db) {
  const int64_t n = x.dim(0), h = x.dim(1);
  const T* g = dy.ptr<T>();
  const T* in = x.ptr<T>();
  T* out = dx.ptr<T>();
  T* bias_grad = db.ptr<T>();
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      const T u = b ? in[r * h + j] + b[j] : in[r * h + j];
      out[r * h + j] = g[r * h + j] * gelu_grad(u);
    }
  }
  for (int64_t j = 0; j < h; ++j) {
    T sum = 0;
    for (int64_t r = 0; r < n; ++r) sum += out[r * h + j];
    bias_grad[j] += sum;
  }
}

}  // namespace

void bias_gelu_forward(Context&, const Tensor& x, const Tensor& b, const Tensor& y) {
  dispatch_cpu_float(x.dtype, "bias_gelu_forward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = x.dim(0), h = x.dim(1);
    const T* in = x.ptr<T>();
    const T* bias = b.ptr<T>();
    T* out = y.ptr<T>();
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j < h; ++j) out[r * h + j] = gelu(in[r * h + j] + bias[j]);
    }
  });
}

void bias_gelu_backward(Context&, const Tensor& dy, const Tensor& x, const Tensor& b,
                        const Tensor& dx, const Tensor& db, const Tensor&) {
  dispatch_cpu_float(x.dtype, "bias_gelu_backward", [&](auto tag) {
    using T = decltype(tag);
    backward<T>(dy, x, b.ptr<T>(), dx, db);
  });
}

void bias_gelu_backward_preact(Context&, const Tensor& dy, const Tensor& u, const Tensor& dx,
                               const Tensor& db, const Tensor&) {
  dispatch_cpu_float(u.dtype, "bias_gelu_backward_preact", [&](auto tag) {
    using T = decltype(tag);
    backward<T>(dy, u, nullptr, dx, db);
  });
}

}  // namespace electra::cpu
