#include <cmath>

#include "kernels/train_metrics.h"

namespace electra::cpu {
namespace {

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

template <class T>
void accumulate(const Tensor& gen_loss, const Tensor& argmax, const Tensor& original,
                const Tensor& weights, const Tensor& counts, float disc_weight, const Tensor& acc) {
  const T* loss = gen_loss.ptr<T>();
  const int32_t* predicted = argmax.ptr<int32_t>();
  const int32_t* truth = original.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  const T* c = counts.ptr<T>();
  double* a = acc.ptr<double>();
  double loss_sum = 0, weight = 0, correct = 0;
  for (int64_t i = 0; i < gen_loss.numel(); ++i) {
    loss_sum += static_cast<double>(loss[i]);
    weight += w[i];
    correct += w[i] * (predicted[i] == truth[i]);
  }
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

}  // namespace

void accumulate_pretrain_metrics(Context&, const Tensor& gen_loss, const Tensor& argmax,
                                 const Tensor& original, const Tensor& weights,
                                 const Tensor& counts, float disc_weight, const Tensor& acc) {
  if (gen_loss.dtype == DType::F64) {
    accumulate<double>(gen_loss, argmax, original, weights, counts, disc_weight, acc);
  } else {
    check_dtype(gen_loss, DType::F32, "accumulate_pretrain_metrics gen_loss (cpu)");
    accumulate<float>(gen_loss, argmax, original, weights, counts, disc_weight, acc);
  }
}

void record_grad_norm(Context&, const Tensor& norm, const Tensor& acc) {
  const float n = *norm.ptr<float>();
  double* a = acc.ptr<double>();
  a[kMetricGradNorm] = n;
  a[kMetricNonFinite] += !std::isfinite(n);
}

}  // namespace electra::cpu
