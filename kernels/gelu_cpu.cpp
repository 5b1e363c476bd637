#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>

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
T normal_pdf(T u) {
  return std::exp(T{-0.5} * u * u) * static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
}

template <class T>
T gelu_grad(T u) {
  return normal_cdf(u) + u * normal_pdf(u);
}

// The f32 path runs on chunks of up to kChunk elements held on the stack, with Eigen's vectorized
// exp (the scalar erfc/exp of libm above took a sixth of an ELECTRA-Small step).
constexpr int kChunk = 64;
using Chunk = Eigen::Array<float, Eigen::Dynamic, 1, Eigen::ColMajor, kChunk, 1>;
using ChunkIn = Eigen::Map<const Eigen::ArrayXf>;
using ChunkOut = Eigen::Map<Eigen::ArrayXf>;

// Phi(-|u|) = 0.5 erfc(|u| / sqrt 2) by the Chebyshev fit of Numerical Recipes' erfcc (relative
// error below 1.2e-7 for every argument, so the left tail keeps its relative accuracy), and
// Phi(|u|) = 1 - Phi(-|u|).
Chunk normal_cdf_f32(const Chunk& u) {
  const Chunk z = u.abs() * static_cast<float>(std::numbers::sqrt2 / 2);
  const Chunk t = (1.0f + 0.5f * z).inverse();
  const Chunk fit =
      -1.26551223f +
      t * (1.00002368f +
           t * (0.37409196f +
                t * (0.09678418f +
                     t * (-0.18628806f +
                          t * (0.27886807f +
                               t * (-1.13520398f +
                                    t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  const Chunk tail = 0.5f * t * (fit - z.square()).exp();
  return (u < 0.0f).select(tail, 1.0f - tail);
}

Chunk gelu_grad_f32(const Chunk& u) {
  return normal_cdf_f32(u) + u * (-0.5f * u.square()).exp() *
                                 static_cast<float>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
}

// u = x[r, j] + b[j] (b null: x is already u) over the chunk [j0, j0 + len) of row r.
template <class T>
Chunk preactivation(const T* x, const T* b, int64_t r, int64_t h, int64_t j0, int64_t len) {
  const ChunkIn xs(x + r * h + j0, len);
  if (b == nullptr) return xs;
  return xs + ChunkIn(b + j0, len);
}

// Rows are independent: tasks of kRowBlock rows. The bias gradient is a sum over rows, computed
// per block of kColBlock columns, each adding the rows in order.
constexpr int64_t kRowBlock = 16, kColBlock = 64;

void forward_f32(const float* x, const float* b, float* y, int64_t r0, int64_t r1, int64_t h) {
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t j0 = 0; j0 < h; j0 += kChunk) {
      const int64_t len = std::min<int64_t>(kChunk, h - j0);
      const Chunk u = preactivation(x, b, r, h, j0, len);
      ChunkOut(y + r * h + j0, len) = u * normal_cdf_f32(u);
    }
  }
}

template <class T>
void forward(Context& ctx, const T* x, const T* b, T* y, int64_t n, int64_t h) {
  ctx.parallel_ranges(n, kRowBlock, [&](int64_t r0, int64_t r1) {
    if constexpr (std::is_same_v<T, float>) {
      forward_f32(x, b, y, r0, r1, h);
    } else {
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t j = 0; j < h; ++j) y[r * h + j] = gelu(x[r * h + j] + b[j]);
      }
    }
  });
}

// dx[r, j] = dy[r, j] * gelu'(x[r, j] + b[j]) (b null: x is already u); db[j] += sum_r dx[r, j].
template <class T>
void backward(Context& ctx, const Tensor& dy, const Tensor& x, const T* b, const Tensor& dx,
              const Tensor& db) {
  const int64_t n = x.dim(0), h = x.dim(1);
  const T* g = dy.ptr<T>();
  const T* in = x.ptr<T>();
  T* out = dx.ptr<T>();
  T* bias_grad = db.ptr<T>();
  ctx.parallel_ranges(n, kRowBlock, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if constexpr (std::is_same_v<T, float>) {
        for (int64_t j0 = 0; j0 < h; j0 += kChunk) {
          const int64_t len = std::min<int64_t>(kChunk, h - j0);
          ChunkOut(out + r * h + j0, len) =
              ChunkIn(g + r * h + j0, len) * gelu_grad_f32(preactivation(in, b, r, h, j0, len));
        }
      } else {
        for (int64_t j = 0; j < h; ++j) {
          const T u = b ? in[r * h + j] + b[j] : in[r * h + j];
          out[r * h + j] = g[r * h + j] * gelu_grad(u);
        }
      }
    }
  });
  ctx.parallel_ranges(h, kColBlock, [&](int64_t j0, int64_t j1) {
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = j0; j < j1; ++j) bias_grad[j] += out[r * h + j];
    }
  });
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void BiasGeluForward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    cpu::forward<T>(ctx, x.ptr<T>(), b.ptr<T>(), y.ptr<T>(), x.dim(0), x.dim(1));
  });
}

void BiasGeluBackward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    cpu::backward<T>(ctx, dy, x, b.ptr<T>(), dx, db);
  });
}

void BiasGeluBackwardPreact::cpu(Context& ctx) const {
  dispatch_cpu_float(u.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    cpu::backward<T>(ctx, dy, u, nullptr, dx, db);
  });
}

}  // namespace electra
