// train_metrics kernels: one block of kThreads sums the micro-batch's rows in f64 (strided
// partial sums, then a fixed shared-memory tree), and thread 0 adds the ratios to the accumulator
// rows the caller named. Runs once per micro-batch over a loss op's rows: negligible next to the
// models.
#include "kernels/cuda_common.cuh"
#include "kernels/train_metrics.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;

__device__ double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

__device__ void add(double* acc, int row, double x) {
  if (row >= 0) acc[row] += x;
}

// Sums sums[k][0..kThreads) into sums[k][0] for k < n; every thread of the block calls it.
__device__ void reduce(double (*sums)[kThreads], int n) {
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      for (int k = 0; k < n; ++k) sums[k][threadIdx.x] += sums[k][threadIdx.x + stride];
    }
    __syncthreads();
  }
}

// Thread 0's part of accumulate_means (the op's rows and factor, by value).
struct MeansArgs {
  MeanRows means;
  BinaryRows binary;
  float binary_factor;
  TotalRows total;
};

__global__ void accumulate_means_kernel(const float* loss, const int32_t* predicted,
                                        const int32_t* truth, const float* w, int64_t m,
                                        const float* c, MeansArgs args, double* a) {
  __shared__ double sums[3][kThreads];
  double loss_sum = 0, weight = 0, correct = 0;
  for (int64_t i = threadIdx.x; i < m; i += kThreads) {
    loss_sum += loss[i];
    weight += w[i];
    correct += w[i] * (predicted[i] == truth[i]);
  }
  sums[0][threadIdx.x] = loss_sum;
  sums[1][threadIdx.x] = weight;
  sums[2][threadIdx.x] = correct;
  reduce(sums, 3);
  if (threadIdx.x != 0) return;
  const double mean = ratio(sums[0][0], sums[1][0]);
  add(a, args.means.mean, mean);
  add(a, args.means.accuracy, ratio(sums[2][0], sums[1][0]));
  add(a, args.means.weight, sums[1][0]);
  double total = mean;
  if (c != nullptr) {
    const BinaryRows& rows = args.binary;
    const double binary_weight = c[kDiscWeight];
    const double binary = ratio(c[kDiscLoss], binary_weight);
    total = mean + static_cast<double>(args.binary_factor) * binary;
    add(a, rows.loss, binary);
    add(a, rows.accuracy, ratio(c[kDiscCorrect], binary_weight));
    add(a, rows.precision, ratio(c[kDiscTruePositive], c[kDiscPredictedPositive]));
    add(a, rows.recall, ratio(c[kDiscTruePositive], c[kDiscActualPositive]));
    add(a, rows.positive_rate, ratio(c[kDiscActualPositive], binary_weight));
    add(a, rows.weight, binary_weight);
  }
  add(a, args.total.total, total);
  add(a, args.total.count, 1);
  add(a, args.total.non_finite, !isfinite(total));
}

__global__ void accumulate_value_means_kernel(const float* value, const float* loss, const float* w,
                                              int64_t m, ValueMeanRows rows, TotalRows total,
                                              double* a) {
  __shared__ double sums[3][kThreads];
  double v = 0, l = 0, weight = 0;
  for (int64_t i = threadIdx.x; i < m; i += kThreads) {
    v += value[i];
    l += loss[i];
    weight += w[i];
  }
  sums[0][threadIdx.x] = v;
  sums[1][threadIdx.x] = l;
  sums[2][threadIdx.x] = weight;
  reduce(sums, 3);
  if (threadIdx.x != 0) return;
  const double mean_value = ratio(sums[0][0], sums[2][0]);
  const double mean_loss = ratio(sums[1][0], sums[2][0]);
  add(a, rows.value, mean_value);
  add(a, rows.loss, mean_loss);
  add(a, total.total, mean_loss);
  add(a, total.non_finite, !isfinite(mean_value) || !isfinite(mean_loss));
}

__global__ void accumulate_loss_kernel(const float* loss, int64_t m, double weight, double count,
                                       TotalRows total, double* a) {
  __shared__ double sums[1][kThreads];
  double s = 0;
  for (int64_t i = threadIdx.x; i < m; i += kThreads) s += loss[i];
  sums[0][threadIdx.x] = s;
  reduce(sums, 1);
  if (threadIdx.x != 0) return;
  const double term = weight * ratio(sums[0][0], count);
  add(a, total.total, term);
  add(a, total.non_finite, !isfinite(term));
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void AccumulateMeans::cuda(Context& ctx) const {
  check_dtype(loss, DType::F32, "accumulate_means loss (cuda)");
  const float* c = counts.data != nullptr ? counts.ptr<float>() : nullptr;
  cuda::accumulate_means_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      loss.ptr<float>(), argmax.ptr<int32_t>(), labels.ptr<int32_t>(), weights.ptr<float>(),
      loss.numel(), c, cuda::MeansArgs{means, binary, binary_factor, total}, acc.ptr<double>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void AccumulateValueMeans::cuda(Context& ctx) const {
  check_dtype(value, DType::F32, "accumulate_value_means value (cuda)");
  cuda::accumulate_value_means_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      value.ptr<float>(), loss.ptr<float>(), weights.ptr<float>(), value.numel(), rows, total,
      acc.ptr<double>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void AccumulateLoss::cuda(Context& ctx) const {
  check_dtype(loss, DType::F32, "accumulate_loss loss (cuda)");
  cuda::accumulate_loss_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      loss.ptr<float>(), loss.numel(), weight, count, total, acc.ptr<double>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
