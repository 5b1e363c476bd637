// CPU reference of matmul: Eigen maps of the row-major matrices (with their leading dimensions),
// one product per batch entry, then the epilogue in plain loops.
#include <Eigen/Dense>
#include <cmath>

#include "kernels/matmul.h"

namespace electra::cpu {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using Map = Eigen::Map<RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class T>
ConstMap<T> const_matrix(const MatrixBatch& x, int64_t i) {
  return ConstMap<T>(x.storage.ptr<T>() + x.offset + i * x.stride, x.rows, x.cols,
                     Eigen::OuterStride<>(x.ld));
}

// gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
template <class T>
T gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
}

template <class T>
void gemm_typed(const GemmArgs& g) {
  const MatmulEpilogue& e = g.epilogue;
  // With the GELU epilogue the product goes to gelu_pre first, then C = gelu(pre).
  const MatrixBatch out = e.gelu_pre != nullptr
                              ? MatrixBatch{*e.gelu_pre, 0, g.c.rows, g.c.cols, g.c.ld, g.c.stride}
                              : g.c;
  for (int64_t i = 0; i < g.batch; ++i) {
    const ConstMap<T> a = const_matrix<T>(g.a, i);
    const ConstMap<T> b = const_matrix<T>(g.b, i);
    Map<T> c(out.storage.ptr<T>() + out.offset + i * out.stride, out.rows, out.cols,
             Eigen::OuterStride<>(out.ld));
    RowMajor<T> product;
    if (g.trans_a && g.trans_b) {
      product.noalias() = a.transpose() * b.transpose();
    } else if (g.trans_a) {
      product.noalias() = a.transpose() * b;
    } else if (g.trans_b) {
      product.noalias() = a * b.transpose();
    } else {
      product.noalias() = a * b;
    }
    // beta == 0 must not read C (it may hold NaN): 0 * NaN is NaN.
    if (g.beta == 0) {
      c = T(g.alpha) * product;
    } else {
      c = T(g.alpha) * product + T(g.beta) * c;
    }
    if (e.bias != nullptr) {
      const T* bias = e.bias->ptr<T>();
      for (int64_t r = 0; r < c.rows(); ++r) {
        for (int64_t col = 0; col < c.cols(); ++col) c(r, col) += bias[col];
      }
    }
  }
  if (e.gelu_pre != nullptr) {
    const T* pre = e.gelu_pre->ptr<T>();
    T* y = g.c.storage.ptr<T>();
    for (int64_t i = 0; i < g.c.storage.numel(); ++i) y[i] = gelu(pre[i]);
  }
}

template <class T>
void bias_grad_typed(const Tensor& dy, const Tensor& db) {
  const int64_t n = dy.dim(-1), m = dy.numel() / n;
  const T* g = dy.ptr<T>();
  T* out = db.ptr<T>();
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) out[c] += g[r * n + c];
  }
}

}  // namespace

void gemm(Context&, const GemmArgs& args) {
  dispatch_cpu_float(args.c.storage.dtype, "matmul", [&](auto zero) {
    using T = decltype(zero);
    gemm_typed<T>(args);
  });
}

void bias_grad(Context&, const Tensor& dy, const Tensor& db) {
  dispatch_cpu_float(dy.dtype, "bias_grad", [&](auto zero) {
    using T = decltype(zero);
    bias_grad_typed<T>(dy, db);
  });
}

}  // namespace electra::cpu
