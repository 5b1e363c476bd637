// CPU reference of attention: the formulas of attention.h as plain loops per (batch, head, query
// row), written for clarity. scratch holds Pd (forward) and then dS (backward).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention.h"
#include "kernels/dropout_mask.h"

namespace electra::cpu {
namespace {

struct Dims {
  int64_t b, t, h, heads, d;
  int64_t ld() const { return 3 * h; }
  // Flat index of element (b, h, i, j) of a [B, heads, T, T] tensor.
  int64_t prob_index(int64_t bi, int64_t hi, int64_t i, int64_t j) const {
    return ((bi * heads + hi) * t + i) * t + j;
  }
};

Dims dims_of(const Tensor& qkv, const AttentionArgs& args) {
  const int64_t h = qkv.dim(2) / 3;
  return Dims{qkv.dim(0), qkv.dim(1), h, args.heads, h / args.heads};
}

template <class T>
T dot(const T* x, const T* y, int64_t n) {
  T s = 0;
  for (int64_t c = 0; c < n; ++c) s += x[c] * y[c];
  return s;
}

template <class T>
void forward_typed(const Tensor& qkv_t, const Tensor& mask_t, const AttentionArgs& args,
                   const Tensor& probs_t, const Tensor& scratch_t, const Tensor& out_t) {
  const Dims n = dims_of(qkv_t, args);
  const T* qkv = qkv_t.ptr<T>();
  const int32_t* mask = mask_t.ptr<int32_t>();
  T* probs = probs_t.ptr<T>();
  T* pd = scratch_t.ptr<T>();
  T* out = out_t.ptr<T>();
  const T scale = T(1) / std::sqrt(static_cast<T>(n.d));
  const T keep_scale = T(1) / (T(1) - static_cast<T>(args.dropout_p));
  const uint64_t site = dropout_site_offset(args.site);
  for (int64_t b = 0; b < n.b; ++b) {
    for (int64_t h = 0; h < n.heads; ++h) {
      for (int64_t i = 0; i < n.t; ++i) {
        const T* q = qkv + (b * n.t + i) * n.ld() + h * n.d;
        T* p = probs + n.prob_index(b, h, i, 0);
        T* prow = pd + n.prob_index(b, h, i, 0);
        T max = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < n.t; ++j) {
          const T* k = qkv + (b * n.t + j) * n.ld() + n.h + h * n.d;
          p[j] = scale * dot(q, k, n.d);
          if (mask[b * n.t + j] != 0) max = std::max(max, p[j]);
        }
        T sum = 0;
        for (int64_t j = 0; j < n.t; ++j) {
          p[j] = mask[b * n.t + j] != 0 ? std::exp(p[j] - max) : T(0);
          sum += p[j];
        }
        for (int64_t j = 0; j < n.t; ++j) {
          if (sum > 0) p[j] /= sum;
          const bool keep = dropout_keep(args.rng, site + n.prob_index(b, h, i, j), args.dropout_p);
          prow[j] = keep ? p[j] * keep_scale : T(0);
        }
        T* o = out + (b * n.t + i) * n.h + h * n.d;
        for (int64_t c = 0; c < n.d; ++c) {
          T s = 0;
          for (int64_t j = 0; j < n.t; ++j)
            s += prow[j] * qkv[(b * n.t + j) * n.ld() + 2 * n.h + h * n.d + c];
          o[c] = s;
        }
      }
    }
  }
}

template <class T>
void backward_typed(const Tensor& qkv_t, const AttentionArgs& args, const Tensor& probs_t,
                    const Tensor& dout_t, const Tensor& scratch_t, const Tensor& dqkv_t) {
  const Dims n = dims_of(qkv_t, args);
  const T* qkv = qkv_t.ptr<T>();
  const T* probs = probs_t.ptr<T>();
  const T* dout = dout_t.ptr<T>();
  T* ds = scratch_t.ptr<T>();
  T* dqkv = dqkv_t.ptr<T>();
  std::fill(dqkv, dqkv + dqkv_t.numel(), T(0));
  const T scale = T(1) / std::sqrt(static_cast<T>(n.d));
  const T keep_scale = T(1) / (T(1) - static_cast<T>(args.dropout_p));
  const uint64_t site = dropout_site_offset(args.site);
  for (int64_t b = 0; b < n.b; ++b) {
    for (int64_t h = 0; h < n.heads; ++h) {
      const auto q_of = [&](int64_t row) { return (b * n.t + row) * n.ld() + h * n.d; };
      const auto k_of = [&](int64_t row) { return q_of(row) + n.h; };
      const auto v_of = [&](int64_t row) { return q_of(row) + 2 * n.h; };
      for (int64_t i = 0; i < n.t; ++i) {
        const T* p = probs + n.prob_index(b, h, i, 0);
        T* row = ds + n.prob_index(b, h, i, 0);
        const T* g = dout + (b * n.t + i) * n.h + h * n.d;
        T rowsum = 0;
        for (int64_t j = 0; j < n.t; ++j) {
          const bool keep = dropout_keep(args.rng, site + n.prob_index(b, h, i, j), args.dropout_p);
          // dV_j += Pd_ij dout_i
          for (int64_t c = 0; c < n.d; ++c)
            dqkv[v_of(j) + c] += (keep ? p[j] * keep_scale : T(0)) * g[c];
          row[j] = keep ? dot(g, qkv + v_of(j), n.d) * keep_scale : T(0);  // dP_ij
          rowsum += p[j] * row[j];
        }
        for (int64_t j = 0; j < n.t; ++j) row[j] = p[j] * (row[j] - rowsum);  // dS_ij
        for (int64_t j = 0; j < n.t; ++j) {
          for (int64_t c = 0; c < n.d; ++c) {
            dqkv[q_of(i) + c] += scale * row[j] * qkv[k_of(j) + c];
            dqkv[k_of(j) + c] += scale * row[j] * qkv[q_of(i) + c];
          }
        }
      }
    }
  }
}

}  // namespace

void attention_forward(Context&, const Tensor& qkv, const Tensor& mask, const AttentionArgs& args,
                       const Tensor& probs, const Tensor& scratch, const Tensor& out) {
  dispatch_cpu_float(qkv.dtype, "attention_forward", [&](auto zero) {
    forward_typed<decltype(zero)>(qkv, mask, args, probs, scratch, out);
  });
}

void attention_backward(Context&, const Tensor& qkv, const Tensor&, const AttentionArgs& args,
                        const Tensor& probs, const Tensor& dout, const Tensor& scratch,
                        const Tensor& dqkv) {
  dispatch_cpu_float(qkv.dtype, "attention_backward", [&](auto zero) {
    backward_typed<decltype(zero)>(qkv, args, probs, dout, scratch, dqkv);
  });
}

}  // namespace electra::cpu
