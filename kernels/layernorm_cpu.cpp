#include <cmath>
#include <type_traits>

#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/simd_cpu.h"

namespace electra::cpu {
namespace {

// Rows are independent (tasks of kRowBlock rows); the parameter gradients are sums over rows,
// computed per block of kColBlock columns, each adding the rows in order.
constexpr int64_t kRowBlock = 32, kColBlock = 64;

// sum_j term(j) over j < h, a row's reduction. f64 (gradient checks): in j order. f32: Vec::kLanes
// running sums (lane l adds the terms j = l mod kLanes, in j order), then the lanes in order, then
// the tail: a fixed order (the same at any thread count) that does not wait on one add per term.
// vec_term(j) gives terms j .. j + kLanes - 1 as a Vec, term(j) one term, with the same operations
// (vec_term is generic, so that an f64 instantiation never compiles its f32 loads).
template <class T, class VecTerm, class Term>
T row_sum(int64_t h, VecTerm vec_term, Term term) {
  T sum = 0;
  int64_t j = 0;
  if constexpr (std::is_same_v<T, float>) {
    Vec acc = Vec::zero();
    for (; j + Vec::kLanes <= h; j += Vec::kLanes) acc = acc + vec_term(j);
    float lanes[Vec::kLanes];
    acc.store(lanes);
    for (float lane : lanes) sum += lane;
  }
  for (; j < h; ++j) sum += term(j);
  return sum;
}

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
      const T sum = row_sum<T>(
          h, [&](auto j) { return Vec::load(row + j); }, [&](int64_t j) { return row[j]; });
      const T mu = sum / static_cast<T>(h);
      const Vec mu_v = Vec::broadcast(static_cast<float>(mu));
      const T sq = row_sum<T>(
          h,
          [&](auto j) {
            const Vec c = Vec::load(row + j) - mu_v;
            return c * c;
          },
          [&](int64_t j) { return (row[j] - mu) * (row[j] - mu); });
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
  // Column j: sum_dg and sum_db over the rows in order, then one add into dg[j] and db[j]. The
  // rows are the outer loop so that a block's columns are read contiguously. Before the rows' dx:
  // dy may be dx (LayerNormBackward with dy_dropout drops dy into dx first), and a row reads its
  // dy before it writes its dx.
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
  ctx.parallel_ranges(n, kRowBlock, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* dr = d + r * h;
      const T* xr = in + r * h;
      const Vec mu_v = Vec::broadcast(static_cast<float>(mu[r]));
      const Vec rs_v = Vec::broadcast(static_cast<float>(rs[r]));
      const T sum_g = row_sum<T>(
          h, [&](auto j) { return Vec::load(dr + j) * Vec::load(g + j); },
          [&](int64_t j) { return dr[j] * g[j]; });
      const T sum_gx = row_sum<T>(
          h,
          [&](auto j) {
            return Vec::load(dr + j) * Vec::load(g + j) * ((Vec::load(xr + j) - mu_v) * rs_v);
          },
          [&](int64_t j) { return dr[j] * g[j] * ((xr[j] - mu[r]) * rs[r]); });
      const T mean_g = sum_g / static_cast<T>(h), mean_gx = sum_gx / static_cast<T>(h);
      for (int64_t j = 0; j < h; ++j) {
        const T xhat = (in[r * h + j] - mu[r]) * rs[r];
        out[r * h + j] = rs[r] * (d[r * h + j] * g[j] - mean_g - xhat * mean_gx);
      }
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

// With dy_dropout, dropout(dy) is formed in dx (the dropout op's CPU step: the same bits as a
// dropout before the backward) and the backward reads it there.
void LayerNormBackward::cpu(Context& ctx) const {
  const bool drop = dy_dropout.p > 0;
  if (drop) Dropout{.x = dy, .site = dy_dropout, .y = dx}.cpu(ctx);
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    cpu::backward<decltype(tag)>(ctx, drop ? dx : dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
  });
}

void ResidualLayerNormForward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    Dropout{.x = x, .site = site, .y = sum}.cpu(ctx);
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
    Dropout{.x = dresidual, .site = site, .y = dx}.cpu(ctx);
  });
  // The caller's BiasGrad of dx, same bits (the op's own CPU member: not a second op call).
  if (dbias.data != nullptr) BiasGrad{.dy = dx, .db = Out(dbias)}.cpu(ctx);
}

}  // namespace electra
