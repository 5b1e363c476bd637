#include <cmath>

#include "kernels/train_metrics.h"

namespace electra::cpu {
namespace {

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

void add(double* acc, int row, double x) {
  if (row >= 0) acc[row] += x;
}

struct RowSums {
  double loss = 0, weight = 0, correct = 0;
};

// L, W and C of the header over the rows of one loss op.
template <class T>
RowSums row_sums(const Tensor& loss, const Tensor& argmax, const Tensor& labels,
                 const Tensor& weights) {
  const T* l = loss.ptr<T>();
  const int32_t* predicted = argmax.ptr<int32_t>();
  const int32_t* truth = labels.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  RowSums s;
  for (int64_t i = 0; i < loss.numel(); ++i) {
    s.loss += static_cast<double>(l[i]);
    s.weight += w[i];
    s.correct += w[i] * (predicted[i] == truth[i]);
  }
  return s;
}

template <class T>
void accumulate_means(const AccumulateMeans& op) {
  double* a = op.acc.ptr<double>();
  const auto [loss_sum, weight, correct] = row_sums<T>(op.loss, op.argmax, op.labels, op.weights);
  const double mean = ratio(loss_sum, weight);
  add(a, op.means.mean, mean);
  add(a, op.means.accuracy, ratio(correct, weight));
  add(a, op.means.weight, weight);
  double total = mean;
  if (op.counts.data != nullptr) {
    const T* c = op.counts.ptr<T>();
    const BinaryRows& rows = op.binary;
    const double binary_weight = static_cast<double>(c[kDiscWeight]);
    const double binary = ratio(static_cast<double>(c[kDiscLoss]), binary_weight);
    total = mean + static_cast<double>(op.binary_factor) * binary;
    add(a, rows.loss, binary);
    add(a, rows.accuracy, ratio(static_cast<double>(c[kDiscCorrect]), binary_weight));
    add(a, rows.precision,
        ratio(static_cast<double>(c[kDiscTruePositive]),
              static_cast<double>(c[kDiscPredictedPositive])));
    add(a, rows.recall,
        ratio(static_cast<double>(c[kDiscTruePositive]),
              static_cast<double>(c[kDiscActualPositive])));
    add(a, rows.positive_rate, ratio(static_cast<double>(c[kDiscActualPositive]), binary_weight));
    add(a, rows.weight, binary_weight);
  }
  add(a, op.total.total, total);
  add(a, op.total.count, 1);
  add(a, op.total.non_finite, !std::isfinite(total));
}

template <class T>
void accumulate_value_means(const AccumulateValueMeans& op) {
  const T* v = op.value.ptr<T>();
  const T* l = op.loss.ptr<T>();
  const float* w = op.weights.ptr<float>();
  double value_sum = 0, loss_sum = 0, weight = 0;
  for (int64_t i = 0; i < op.value.numel(); ++i) {
    value_sum += static_cast<double>(v[i]);
    loss_sum += static_cast<double>(l[i]);
    weight += w[i];
  }
  double* a = op.acc.ptr<double>();
  const double value = ratio(value_sum, weight), loss = ratio(loss_sum, weight);
  add(a, op.rows.value, value);
  add(a, op.rows.loss, loss);
  add(a, op.total.total, loss);
  add(a, op.total.non_finite, !std::isfinite(value) || !std::isfinite(loss));
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

void check_metrics_acc(const Tensor& acc, std::initializer_list<int> rows, const char* what) {
  ELECTRA_CHECK(acc.rank == 1 && acc.dtype == DType::F64, what, ": ", acc.str(),
                " is not an f64 vector");
  for (const int row : rows) {
    ELECTRA_CHECK(row >= kNoRow && row < acc.numel(), what, ": row ", row, " outside ", acc.str());
  }
}

void AccumulateMeans::cpu(Context&) const {
  if (loss.dtype == DType::F64) {
    cpu::accumulate_means<double>(*this);
  } else {
    check_dtype(loss, DType::F32, "accumulate_means loss (cpu)");
    cpu::accumulate_means<float>(*this);
  }
}

void AccumulateValueMeans::cpu(Context&) const {
  dispatch_cpu_float(value.dtype, kName,
                     [&](auto zero) { cpu::accumulate_value_means<decltype(zero)>(*this); });
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
  cpu::add(a, total.total, term);
  cpu::add(a, total.non_finite, !std::isfinite(term));
}

}  // namespace electra
