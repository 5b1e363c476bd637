#include <cmath>

#include "kernels/layernorm.h"

namespace electra::cpu {
namespace {

// Rows are independent (tasks of kRowBlock rows); the parameter gradients are sums over rows,
// computed per block of kColBlock columns, each adding the rows in order.
constexpr int64_t kRowBlock = 32, kColBlock = 64;

template <class T>
void forward(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
             const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  const int64_t n = x.dim(0), h = x.dim(1);
  const T* in = x.ptr<T>();
  const T* g = gamma.ptr<T>();
  const T* b = beta.ptr<T>();
  T* out = y.ptr<T>();
  T* mu_out = mean.ptr<T>();
  T* rs_out = rstd.ptr<T>();
  ctx.parallel_ranges(n, kRowBlock, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
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
  });
}

template <class T>
void backward(Context& ctx, const Tensor& dy, const Tensor& x, const Tensor& gamma,
              const Tensor& mean, const Tensor& rstd, const Tensor& dx, const Tensor& dgamma,
              const Tensor& dbeta) {
  const int64_t n = x.dim(0), h = x.dim(1);
  const T* d = dy.ptr<T>();
  const T* in = x.ptr<T>();
  const T* g = gamma.ptr<T>();
  const T* mu = mean.ptr<T>();
  const T* rs = rstd.ptr<T>();
  T* out = dx.ptr<T>();
  T* dg = dgamma.ptr<T>();
  T* db = dbeta.ptr<T>();
  ctx.parallel_ranges(n, kRowBlock, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
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
  });
  // Column j: sum_dg and sum_db over the rows in order, then one add into dg[j] and db[j]. The
  // rows are the outer loop so that a block's columns are read contiguously.
  ctx.parallel_ranges(h, kColBlock, [&](int64_t j0, int64_t j1) {
    T sum_dg[kColBlock] = {}, sum_db[kColBlock] = {};
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = j0; j < j1; ++j) {
        sum_dg[j - j0] += d[r * h + j] * (in[r * h + j] - mu[r]) * rs[r];
        sum_db[j - j0] += d[r * h + j];
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      dg[j] += sum_dg[j - j0];
      db[j] += sum_db[j - j0];
    }
  });
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void LayerNormForward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    cpu::forward<decltype(tag)>(ctx, x, gamma, beta, eps, y, mean, rstd);
  });
}

void LayerNormBackward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    cpu::backward<decltype(tag)>(ctx, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
  });
}

void ResidualLayerNormForward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    DropoutForward{.x = x, .site = site, .y = sum}.cpu(ctx);
    T* s = sum.ptr<T>();
    const T* res = residual.ptr<T>();
    ctx.parallel_ranges(x.numel(), cpu::kRowBlock * x.dim(1), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) s[i] += res[i];
    });
    cpu::forward<T>(ctx, sum, gamma, beta, eps, y, mean, rstd);
  });
}

void ResidualLayerNormBackward::cpu(Context& ctx) const {
  dispatch_cpu_float(sum.dtype, kName, [&](auto tag) {
    cpu::backward<decltype(tag)>(ctx, dy, sum, gamma, mean, rstd, dresidual, dgamma, dbeta);
    DropoutBackward{.dy = dresidual, .site = site, .dx = dx}.cpu(ctx);
  });
}

}  // namespace electra
