#include <cmath>

#include "kernels/layernorm.h"

namespace electra::cpu {
namespace {

template <class T>
void forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& y,
             const Tensor& mean, const Tensor& rstd) {
  const int64_t n = x.dim(0), h = x.dim(1);
  const T* in = x.ptr<T>();
  const T* g = gamma.ptr<T>();
  const T* b = beta.ptr<T>();
  T* out = y.ptr<T>();
  T* mu_out = mean.ptr<T>();
  T* rs_out = rstd.ptr<T>();
  for (int64_t r = 0; r < n; ++r) {
    const T* row = in + r * h;
    T sum = 0;
    for (int64_t j = 0; j < h; ++j) sum += row[j];
    const T mu = sum / static_cast<T>(h);
    T sq = 0;
    for (int64_t j = 0; j < h; ++j) sq += (row[j] - mu) * (row[j] - mu);
    const T rs = T{1} / std::sqrt(sq / static_cast<T>(h) + static_cast<T>(eps));
    for (int64_t j = 0; j < h; ++j) out[r * h + j] = (row[j] - mu) * rs * g[j] + b[j];
    mu_out[r] = mu;
    rs_out[r] = rs;
  }
}

template <class T>
void backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
              const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
  const int64_t n = x.dim(0), h = x.dim(1);
  const T* d = dy.ptr<T>();
  const T* in = x.ptr<T>();
  const T* g = gamma.ptr<T>();
  const T* mu = mean.ptr<T>();
  const T* rs = rstd.ptr<T>();
  T* out = dx.ptr<T>();
  T* dg = dgamma.ptr<T>();
  T* db = dbeta.ptr<T>();
  for (int64_t r = 0; r < n; ++r) {
    T sum_g = 0, sum_gx = 0;
    for (int64_t j = 0; j < h; ++j) {
      const T xhat = (in[r * h + j] - mu[r]) * rs[r];
      sum_g += d[r * h + j] * g[j];
      sum_gx += d[r * h + j] * g[j] * xhat;
    }
    const T mean_g = sum_g / static_cast<T>(h), mean_gx = sum_gx / static_cast<T>(h);
    for (int64_t j = 0; j < h; ++j) {
      const T xhat = (in[r * h + j] - mu[r]) * rs[r];
      out[r * h + j] = rs[r] * (d[r * h + j] * g[j] - mean_g - xhat * mean_gx);
    }
  }
  for (int64_t j = 0; j < h; ++j) {
    T sum_dg = 0, sum_db = 0;
    for (int64_t r = 0; r < n; ++r) {
      sum_dg += d[r * h + j] * (in[r * h + j] - mu[r]) * rs[r];
      sum_db += d[r * h + j];
    }
    dg[j] += sum_dg;
    db[j] += sum_db;
  }
}

}  // namespace

void layernorm_forward(Context&, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       float eps, const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  dispatch_cpu_float(x.dtype, "layernorm_forward",
                     [&](auto tag) { forward<decltype(tag)>(x, gamma, beta, eps, y, mean, rstd); });
}

void layernorm_backward(Context&, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                        const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                        const Tensor& dgamma, const Tensor& dbeta, const Tensor&) {
  dispatch_cpu_float(x.dtype, "layernorm_backward", [&](auto tag) {
    backward<decltype(tag)>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
  });
}

void residual_layernorm_forward(Context& ctx, const Tensor& x, const Tensor& residual,
                                const DropoutSite& site, const Tensor& gamma, const Tensor& beta,
                                float eps, const Tensor& sum, const Tensor& y, const Tensor& mean,
                                const Tensor& rstd) {
  dispatch_cpu_float(x.dtype, "residual_layernorm_forward", [&](auto tag) {
    using T = decltype(tag);
    cpu::dropout_forward(ctx, x, sum, site);
    T* s = sum.ptr<T>();
    const T* res = residual.ptr<T>();
    for (int64_t i = 0; i < x.numel(); ++i) s[i] += res[i];
    forward<T>(sum, gamma, beta, eps, y, mean, rstd);
  });
}

void residual_layernorm_backward(Context& ctx, const Tensor& dy, const Tensor& sum,
                                 const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                                 const DropoutSite& site, const Tensor& dx, const Tensor& dresidual,
                                 const Tensor& dgamma, const Tensor& dbeta, const Tensor&) {
  dispatch_cpu_float(sum.dtype, "residual_layernorm_backward", [&](auto tag) {
    backward<decltype(tag)>(dy, sum, gamma, mean, rstd, dresidual, dgamma, dbeta);
    cpu::dropout_backward(ctx, dresidual, dx, site);
  });
}

}  // namespace electra::cpu
