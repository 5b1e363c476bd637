// CPU reference of attention: the formulas of attention.h per (batch, head), with the four
// products as Eigen matrix products on strided views of the packed qkv (so the reference stays a
// few readable lines and runs at GEMM speed). scratch holds Pd (forward), then Pd, dPd and dS in
// turn (backward). The (batch, head) blocks are independent: one task each in the thread pool.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention.h"
#include "kernels/dropout_mask_cpu.h"

namespace electra::cpu {
namespace {

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstView = Eigen::Map<const Matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using View = Eigen::Map<Matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

struct Dims {
  int64_t b, t, h, heads, d;
  int64_t ld() const { return 3 * h; }
  // Flat index of element (b, h, i, 0) of a [B, heads, T, T] tensor.
  int64_t block(int64_t bi, int64_t hi) const { return (bi * heads + hi) * t * t; }
};

Dims dims_of(const Tensor& qkv, const AttentionArgs& args) {
  const int64_t h = qkv.dim(2) / 3;
  return Dims{qkv.dim(0), qkv.dim(1), h, args.heads, h / args.heads};
}

// Q, K or V (part 0, 1, 2) of batch b, head h: a [T, d] view with leading dimension 3H.
template <class T>
ConstView<T> part(const T* qkv, const Dims& n, int64_t b, int64_t h, int part) {
  return ConstView<T>(qkv + b * n.t * n.ld() + part * n.h + h * n.d, n.t, n.d,
                      Eigen::OuterStride<>(n.ld()));
}

// y(i, j) = x(i, j) keep_ij / (1 - p) with the mask of the (b, h) block (x may be y): Pd from P,
// or dP from dPd.
template <class T>
void apply_dropout(const T* x, T* y, const Dims& n, int64_t b, int64_t h,
                   const AttentionArgs& args) {
  if (args.dropout_p == 0) {
    if (x != y) std::copy(x, x + n.t * n.t, y);
    return;
  }
  const int64_t bh = b * n.heads + h;
  for (int64_t i = 0; i < n.t; ++i) {  // rows of the mask are attention_mask_pitch(T) apart
    apply_attention_dropout_mask(
        args.rng, attention_mask_index(dropout_site_offset(args.site), bh, n.t, i, 0),
        args.dropout_p, x + i * n.t, y + i * n.t, n.t);
  }
}

template <class T>
void forward_typed(Context& ctx, const Tensor& qkv_t, const Tensor& mask_t,
                   const AttentionArgs& args, const Tensor& probs_t, const Tensor& scratch_t,
                   const Tensor& out_t) {
  const Dims n = dims_of(qkv_t, args);
  const T* qkv = qkv_t.ptr<T>();
  const int32_t* mask = mask_t.ptr<int32_t>();
  const T scale = T(1) / std::sqrt(static_cast<T>(n.d));
  ctx.parallel_for(n.b * n.heads, [&](int64_t task) {
    const int64_t b = task / n.heads, h = task % n.heads;
    const int32_t* real = mask + b * n.t;
    T* p = probs_t.ptr<T>() + n.block(b, h);
    Eigen::Map<Matrix<T>> probs(p, n.t, n.t);
    probs.noalias() = scale * (part(qkv, n, b, h, 0) * part(qkv, n, b, h, 1).transpose());
    for (int64_t i = 0; i < n.t; ++i) {  // softmax over the real keys of row i
      T* row = p + i * n.t;
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < n.t; ++j) {
        if (real[j] != 0) max = std::max(max, row[j]);
      }
      T sum = 0;
      for (int64_t j = 0; j < n.t; ++j) {
        row[j] = real[j] != 0 ? std::exp(row[j] - max) : T(0);
        sum += row[j];
      }
      if (sum > 0) {
        for (int64_t j = 0; j < n.t; ++j) row[j] /= sum;
      }
    }
    T* pd = scratch_t.ptr<T>() + n.block(b, h);
    apply_dropout(p, pd, n, b, h, args);
    View<T> out(out_t.ptr<T>() + b * n.t * n.h + h * n.d, n.t, n.d, Eigen::OuterStride<>(n.h));
    out.noalias() = Eigen::Map<const Matrix<T>>(pd, n.t, n.t) * part(qkv, n, b, h, 2);
  });
}

template <class T>
void backward_typed(Context& ctx, const Tensor& qkv_t, const AttentionArgs& args,
                    const Tensor& probs_t, const Tensor& dout_t, const Tensor& scratch_t,
                    const Tensor& dqkv_t) {
  const Dims n = dims_of(qkv_t, args);
  const T* qkv = qkv_t.ptr<T>();
  T* dqkv = dqkv_t.ptr<T>();
  const T scale = T(1) / std::sqrt(static_cast<T>(n.d));
  ctx.parallel_for(n.b * n.heads, [&](int64_t task) {
    const int64_t b = task / n.heads, h = task % n.heads;
    const T* p = probs_t.ptr<T>() + n.block(b, h);
    T* s = scratch_t.ptr<T>() + n.block(b, h);
    Eigen::Map<Matrix<T>> work(s, n.t, n.t);
    const ConstView<T> dout(dout_t.ptr<T>() + b * n.t * n.h + h * n.d, n.t, n.d,
                            Eigen::OuterStride<>(n.h));
    auto dpart = [&](int part) {
      return View<T>(dqkv + b * n.t * n.ld() + part * n.h + h * n.d, n.t, n.d,
                     Eigen::OuterStride<>(n.ld()));
    };
    // dV = Pd^T dout
    apply_dropout(p, s, n, b, h, args);
    dpart(2).noalias() = work.transpose() * dout;
    // dP = (dout V^T) * keep / (1 - p);  dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik)
    work.noalias() = dout * part(qkv, n, b, h, 2).transpose();
    apply_dropout(s, s, n, b, h, args);
    for (int64_t i = 0; i < n.t; ++i) {
      T* row = s + i * n.t;
      const T* prow = p + i * n.t;
      T rowsum = 0;
      for (int64_t j = 0; j < n.t; ++j) rowsum += prow[j] * row[j];
      for (int64_t j = 0; j < n.t; ++j) row[j] = prow[j] * (row[j] - rowsum);
    }
    // dQ = dS K / sqrt(d),  dK = dS^T Q / sqrt(d)
    dpart(0).noalias() = scale * (work * part(qkv, n, b, h, 1));
    dpart(1).noalias() = scale * (work.transpose() * part(qkv, n, b, h, 0));
  });
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

// The CPU keeps the probabilities: saved = P [B, heads, T, T].
void AttentionForward::cpu(Context& ctx) const {
  if (qkv.empty()) return;
  dispatch_cpu_float(qkv.dtype, kName, [&](auto zero) {
    cpu::forward_typed<decltype(zero)>(ctx, qkv, mask, args, saved, scratch, out);
  });
}

void AttentionBackward::cpu(Context& ctx) const {
  if (qkv.empty()) return;
  dispatch_cpu_float(qkv.dtype, kName, [&](auto zero) {
    cpu::backward_typed<decltype(zero)>(ctx, qkv, args, saved, dout, scratch, dqkv);
  });
}

}  // namespace electra
