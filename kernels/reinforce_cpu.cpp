#include <algorithm>
#include <cfloat>
#include <cmath>

#include "kernels/reinforce.h"

namespace electra::cpu {
namespace {

template <class T>
T softplus(T x) {
  return std::max(x, T{0}) + std::log1p(std::exp(-std::abs(x)));
}

template <class T>
void run(const Tensor& dlogits, const Tensor& labels, const Tensor& samples, const Tensor& weights,
         const Tensor& token_loss, const Tensor& positions, const Tensor& baseline, int64_t vocab,
         T scale, const Tensor& baseline_grad, const ReinforceSlots& out) {
  const int64_t m = dlogits.dim(0), stride = dlogits.dim(1);
  const int64_t slots = positions.dim(1), seq_len = token_loss.numel() / positions.dim(0);
  const int32_t* y = labels.ptr<int32_t>();
  const int32_t* x = samples.ptr<int32_t>();
  const int32_t* pos = positions.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  const T* loss = token_loss.ptr<T>();
  const T* u = baseline.ptr<T>();
  T* du = baseline_grad.ptr<T>();
  T* reward = out.reward.ptr<T>();
  T* advantage = out.advantage.ptr<T>();
  T* log_prob = out.log_prob.ptr<T>();
  T* baseline_loss = out.baseline_loss.ptr<T>();
  for (int64_t i = 0; i < m; ++i) {
    T* row = dlogits.ptr<T>() + i * stride;
    if (w[i] == 0.0f) {
      reward[i] = advantage[i] = log_prob[i] = baseline_loss[i] = du[i] = T{0};
      std::fill(row, row + stride, T{0});
      continue;
    }
    ELECTRA_CHECK(w[i] == 1.0f, "reinforce: slot weight ", w[i], " at row ", i, " is not 0 or 1");
    ELECTRA_CHECK(y[i] >= 0 && y[i] < vocab && x[i] >= 0 && x[i] < vocab, "reinforce: row ", i,
                  ": label ", y[i], " or sample ", x[i], " outside [0, ", vocab, ")");
    const T r = loss[(i / slots) * seq_len + pos[i]];
    const T q = std::exp(-r), ui = u[i];
    const T a = r - softplus(-ui);
    reward[i] = r;
    advantage[i] = a;
    baseline_loss[i] = q * softplus(-ui) + (T{1} - q) * softplus(ui);
    du[i] = scale * (T{1} / (T{1} + std::exp(-ui)) - q);
    const T p_sample = row[x[i]] + (x[i] == y[i] ? T{1} : T{0});
    log_prob[i] = std::log(std::max(p_sample, static_cast<T>(FLT_MIN)));
    const T g = scale * a;
    for (int64_t j = 0; j < vocab; ++j) {
      const T p = row[j] + (j == y[i] ? T{1} : T{0});
      row[j] = g * (p - (j == x[i] ? T{1} : T{0}));
    }
    std::fill(row + vocab, row + stride, T{0});
  }
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void Reinforce::cpu(Context&) const {
  check_dtype(token_loss, dlogits.dtype, "reinforce (cpu) token_loss");
  dispatch_cpu_float(dlogits.dtype, kName, [&](auto zero) {
    using T = decltype(zero);
    cpu::run<T>(dlogits, labels, samples, weights, token_loss, positions, baseline, params.vocab,
                static_cast<T>(params.scale.get()), baseline_grad, out);
  });
}

}  // namespace electra
