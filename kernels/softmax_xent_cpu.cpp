#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "kernels/softmax_sample_cpu.h"
#include "kernels/softmax_xent.h"

namespace electra::cpu {
namespace {

// exp(x - max) runs on a fixed-size aligned buffer so that every element takes Eigen's vectorized
// exp: on the row itself Eigen would peel a scalar head up to the first aligned element, whose
// results differ in the last bit, and a row's values would depend on its address (the padded and
// unpadded vocabulary layouts would then disagree).
constexpr int64_t kExpChunk = 64;
template <class T>
using ExpChunk = Eigen::Array<T, kExpChunk, 1>;

// The first index of the largest of x[0, n) if that is above `floor`, else -1: what the loop
// `for j: if (x[j] > floor) floor = x[j], at = j` finds (a NaN never wins; ties go to the lowest
// index), as a vectorised max and a scan for its first occurrence.
template <class T>
int64_t first_max_above(const T* x, int64_t n, T floor) {
  const T max = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(x, n)
                    .template maxCoeff<Eigen::PropagateNumbers>();
  if (!(max > floor)) return -1;
  return std::find(x, x + n, max) - x;
}

template <class T>
void run(Context& ctx, const Tensor& logits, const Tensor& labels, const Tensor& weights,
         const SoftmaxXentParams& params, const Tensor& loss, const Tensor& sample,
         const Tensor& argmax) {
  const int64_t m = logits.dim(0), stride = logits.dim(1), v = params.vocab;
  T* x = logits.ptr<T>();
  const int32_t* y = labels.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  T* out_loss = loss.ptr<T>();
  int32_t* out_sample = sample.ptr<int32_t>();
  int32_t* out_argmax = argmax.ptr<int32_t>();
  const RngStream stream = params.stream.resolved();
  const float scale = params.scale.get();
  const float exp2_scale = sample_exp2_scale(params.temperature);
  // Rows are independent: one task each.
  ctx.parallel_for(m, [&](int64_t i) {
    T* row = x + i * stride;
    // The argmax and the sample read the logits before they are overwritten by the gradient.
    // The first largest logit; as `if (row[j] > row[top]) top = j` from top = 0, a NaN at 0 wins.
    const int64_t top =
        std::isnan(row[0])
            ? 0
            : std::max<int64_t>(0, first_max_above(row, v, static_cast<T>(-INFINITY)));
    out_argmax[i] = static_cast<int32_t>(top);
    const int64_t drawn = sample_column(row, v, exp2_scale, stream.bits(static_cast<uint64_t>(i)));
    out_sample[i] = static_cast<int32_t>(drawn >= 0 ? drawn : top);

    // e_j = exp(x_j - max) is stored over the row (the logits are no longer needed); the sum is
    // accumulated in f64 even for f32 rows: a sequential f32 sum over 30k terms would drift by
    // ~1e-5 relative, more than the kernel's tree-shaped f32 sum it is the oracle for.
    const T max = row[top];
    const T label_logit = w[i] != 0 && y[i] >= 0 && y[i] < v ? row[y[i]] : T(0);
    double sum = 0;
    for (int64_t c = 0; c < v; c += kExpChunk) {
      const int64_t len = std::min(kExpChunk, v - c);
      ExpChunk<T> e = ExpChunk<T>::Constant(max);
      std::copy(row + c, row + c + len, e.data());
      e = (e - max).exp();
      std::copy(e.data(), e.data() + len, row + c);
      sum += e.head(len).template cast<double>().sum();
    }
    const T lse = max + static_cast<T>(std::log(sum));
    const T wi = static_cast<T>(w[i]);
    if (wi == 0) {
      out_loss[i] = 0;
      for (int64_t j = 0; j < stride; ++j) row[j] = 0;
      return;
    }
    ELECTRA_CHECK(y[i] >= 0 && y[i] < v, "softmax_xent: label ", y[i], " of row ", i,
                  " outside the vocabulary of ", v);
    out_loss[i] = wi * (lse - label_logit);
    // softmax_j = e_j / sum
    const T coef = wi * static_cast<T>(scale) / static_cast<T>(sum);
    for (int64_t j = 0; j < v; ++j) row[j] *= coef;
    row[y[i]] -= wi * static_cast<T>(scale);
    for (int64_t j = v; j < stride; ++j) row[j] = 0;
  });
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void SoftmaxXent::cpu(Context& ctx) const {
  dispatch_cpu_float(logits.dtype, kName, [&](auto zero) {
    using T = decltype(zero);
    cpu::run<T>(ctx, logits, labels, weights, params, loss, sample, argmax);
  });
}

}  // namespace electra
