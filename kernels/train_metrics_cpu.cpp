#include <cmath>

#include "kernels/train_metrics.h"

namespace electra::cpu {
namespace {

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

struct SlotSums {
  double loss = 0, weight = 0, correct = 0;
};

// L, W and C of the header over the rows of one loss op.
template <class T>
SlotSums slot_sums(const Tensor& loss, const Tensor& argmax, const Tensor& labels,
                   const Tensor& weights) {
  const T* l = loss.ptr<T>();
  const int32_t* predicted = argmax.ptr<int32_t>();
  const int32_t* truth = labels.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  SlotSums s;
  for (int64_t i = 0; i < loss.numel(); ++i) {
    s.loss += static_cast<double>(l[i]);
    s.weight += w[i];
    s.correct += w[i] * (predicted[i] == truth[i]);
  }
  return s;
}

template <class T>
void accumulate(const Tensor& gen_loss, const Tensor& argmax, const Tensor& original,
                const Tensor& weights, const Tensor& counts, float disc_weight, const Tensor& acc) {
  const T* c = counts.ptr<T>();
  double* a = acc.ptr<double>();
  const auto [loss_sum, weight, correct] = slot_sums<T>(gen_loss, argmax, original, weights);
  const double gen = ratio(loss_sum, weight);
  const double disc_weight_sum = static_cast<double>(c[kDiscWeight]);
  const double disc = ratio(static_cast<double>(c[kDiscLoss]), disc_weight_sum);
  const double total = gen + static_cast<double>(disc_weight) * disc;
  a[kMetricGenLoss] += gen;
  a[kMetricGenAccuracy] += ratio(correct, weight);
  a[kMetricDiscLoss] += disc;
  a[kMetricDiscAccuracy] += ratio(static_cast<double>(c[kDiscCorrect]), disc_weight_sum);
  a[kMetricDiscPrecision] += ratio(static_cast<double>(c[kDiscTruePositive]),
                                   static_cast<double>(c[kDiscPredictedPositive]));
  a[kMetricDiscRecall] +=
      ratio(static_cast<double>(c[kDiscTruePositive]), static_cast<double>(c[kDiscActualPositive]));
  a[kMetricReplaced] += ratio(static_cast<double>(c[kDiscActualPositive]), disc_weight_sum);
  a[kMetricTotalLoss] += total;
  a[kMetricMasked] += weight;
  a[kMetricTokens] += disc_weight_sum;
  a[kMetricMicroBatches] += 1;
  a[kMetricNonFinite] += !std::isfinite(total);
}

template <class T>
void accumulate_mlm(const Tensor& loss, const Tensor& argmax, const Tensor& labels,
                    const Tensor& weights, const Tensor& acc) {
  const SlotSums s = slot_sums<T>(loss, argmax, labels, weights);
  double* a = acc.ptr<double>();
  const double mlm = ratio(s.loss, s.weight);
  a[kMetricMlmLoss] += mlm;
  a[kMetricMlmAccuracy] += ratio(s.correct, s.weight);
  a[kMetricTotalLoss] += mlm;
  a[kMetricNonFinite] += !std::isfinite(mlm);
}

template <class T>
void accumulate_reinforce(const Tensor& reward, const Tensor& baseline_loss, const Tensor& weights,
                          const Tensor& acc) {
  const T* r = reward.ptr<T>();
  const T* l = baseline_loss.ptr<T>();
  const float* w = weights.ptr<float>();
  double reward_sum = 0, loss_sum = 0, weight = 0;
  for (int64_t i = 0; i < reward.numel(); ++i) {
    reward_sum += static_cast<double>(r[i]);
    loss_sum += static_cast<double>(l[i]);
    weight += w[i];
  }
  double* a = acc.ptr<double>();
  const double mean_reward = ratio(reward_sum, weight), baseline = ratio(loss_sum, weight);
  a[kMetricReward] += mean_reward;
  a[kMetricBaselineLoss] += baseline;
  a[kMetricTotalLoss] += baseline;
  a[kMetricNonFinite] += !std::isfinite(mean_reward) || !std::isfinite(baseline);
}

template <class T>
double sum(const Tensor& x) {
  const T* v = x.ptr<T>();
  double s = 0;
  for (int64_t i = 0; i < x.numel(); ++i) s += static_cast<double>(v[i]);
  return s;
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void AccumulatePretrainMetrics::cpu(Context&) const {
  if (gen_loss.dtype == DType::F64) {
    cpu::accumulate<double>(gen_loss, argmax, original, weights, counts, disc_weight, acc);
  } else {
    check_dtype(gen_loss, DType::F32, "accumulate_pretrain_metrics gen_loss (cpu)");
    cpu::accumulate<float>(gen_loss, argmax, original, weights, counts, disc_weight, acc);
  }
}

void AccumulateMlmMetrics::cpu(Context&) const {
  if (loss.dtype == DType::F64) {
    cpu::accumulate_mlm<double>(loss, argmax, labels, weights, acc);
  } else {
    check_dtype(loss, DType::F32, "accumulate_mlm_metrics loss (cpu)");
    cpu::accumulate_mlm<float>(loss, argmax, labels, weights, acc);
  }
}

void AccumulateReinforceMetrics::cpu(Context&) const {
  dispatch_cpu_float(reward.dtype, kName, [&](auto zero) {
    cpu::accumulate_reinforce<decltype(zero)>(reward, baseline_loss, weights, acc);
  });
}

void RecordGradNorm::cpu(Context&) const {
  const float n = *norm.ptr<float>();
  double* a = acc.ptr<double>();
  a[kMetricGradNorm] = n;
  a[kMetricNonFinite] += !std::isfinite(n);
}

void AccumulateLoss::cpu(Context&) const {
  double s = 0;
  if (loss.dtype == DType::F64) {
    s = cpu::sum<double>(loss);
  } else {
    check_dtype(loss, DType::F32, "accumulate_loss loss (cpu)");
    s = cpu::sum<float>(loss);
  }
  const double term = weight * cpu::ratio(s, count);
  double* a = acc.ptr<double>();
  a[kMetricTotalLoss] += term;
  a[kMetricNonFinite] += !std::isfinite(term);
}

}  // namespace electra
