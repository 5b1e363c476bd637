// train_metrics kernels: one block of kThreads sums the micro-batch's slots in f64 (strided
// partial sums, then a fixed shared-memory tree), and thread 0 adds the ratios to the accumulator.
// Runs once per micro-batch over B * N slots: negligible next to the models.
#include "kernels/cuda_common.cuh"
#include "kernels/train_metrics.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;

__device__ double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

// L, W, C (kernels/train_metrics.h) of m rows into sums[k][0]; every thread of the block calls it.
__device__ void slot_sums(const float* loss, const int32_t* predicted, const int32_t* truth,
                          const float* w, int64_t m, double (*sums)[kThreads]) {
  double loss_sum = 0, weight = 0, correct = 0;
  for (int64_t i = threadIdx.x; i < m; i += kThreads) {
    loss_sum += loss[i];
    weight += w[i];
    correct += w[i] * (predicted[i] == truth[i]);
  }
  sums[0][threadIdx.x] = loss_sum;
  sums[1][threadIdx.x] = weight;
  sums[2][threadIdx.x] = correct;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      for (int k = 0; k < 3; ++k) sums[k][threadIdx.x] += sums[k][threadIdx.x + stride];
    }
    __syncthreads();
  }
}

__global__ void accumulate_kernel(const float* loss, const int32_t* predicted, const int32_t* truth,
                                  const float* w, const float* c, float disc_weight, double* a,
                                  int64_t m) {
  __shared__ double sums[3][kThreads];
  slot_sums(loss, predicted, truth, w, m, sums);
  if (threadIdx.x != 0) return;
  const double gen = ratio(sums[0][0], sums[1][0]);
  const double disc_weight_sum = c[kDiscWeight];
  const double disc = ratio(c[kDiscLoss], disc_weight_sum);
  const double total = gen + static_cast<double>(disc_weight) * disc;
  a[kMetricGenLoss] += gen;
  a[kMetricGenAccuracy] += ratio(sums[2][0], sums[1][0]);
  a[kMetricDiscLoss] += disc;
  a[kMetricDiscAccuracy] += ratio(c[kDiscCorrect], disc_weight_sum);
  a[kMetricDiscPrecision] += ratio(c[kDiscTruePositive], c[kDiscPredictedPositive]);
  a[kMetricDiscRecall] += ratio(c[kDiscTruePositive], c[kDiscActualPositive]);
  a[kMetricReplaced] += ratio(c[kDiscActualPositive], disc_weight_sum);
  a[kMetricTotalLoss] += total;
  a[kMetricMasked] += sums[1][0];
  a[kMetricTokens] += disc_weight_sum;
  a[kMetricMicroBatches] += 1;
  a[kMetricNonFinite] += !isfinite(total);
}

__global__ void accumulate_mlm_kernel(const float* loss, const int32_t* predicted,
                                      const int32_t* truth, const float* w, double* a, int64_t m) {
  __shared__ double sums[3][kThreads];
  slot_sums(loss, predicted, truth, w, m, sums);
  if (threadIdx.x != 0) return;
  const double mlm = ratio(sums[0][0], sums[1][0]);
  a[kMetricMlmLoss] += mlm;
  a[kMetricMlmAccuracy] += ratio(sums[2][0], sums[1][0]);
  a[kMetricTotalLoss] += mlm;
  a[kMetricNonFinite] += !isfinite(mlm);
}

__global__ void accumulate_reinforce_kernel(const float* reward, const float* baseline_loss,
                                            const float* w, double* a, int64_t m) {
  __shared__ double sums[3][kThreads];
  double r = 0, l = 0, weight = 0;
  for (int64_t i = threadIdx.x; i < m; i += kThreads) {
    r += reward[i];
    l += baseline_loss[i];
    weight += w[i];
  }
  sums[0][threadIdx.x] = r;
  sums[1][threadIdx.x] = l;
  sums[2][threadIdx.x] = weight;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      for (int k = 0; k < 3; ++k) sums[k][threadIdx.x] += sums[k][threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  const double mean_reward = ratio(sums[0][0], sums[2][0]);
  const double baseline = ratio(sums[1][0], sums[2][0]);
  a[kMetricReward] += mean_reward;
  a[kMetricBaselineLoss] += baseline;
  a[kMetricTotalLoss] += baseline;
  a[kMetricNonFinite] += !isfinite(mean_reward) || !isfinite(baseline);
}

__global__ void record_grad_norm_kernel(const float* norm, double* a) {
  a[kMetricGradNorm] = *norm;
  a[kMetricNonFinite] += !isfinite(*norm);
}

__global__ void accumulate_loss_kernel(const float* loss, int64_t m, double weight, double count,
                                       double* a) {
  __shared__ double sums[kThreads];
  double s = 0;
  for (int64_t i = threadIdx.x; i < m; i += kThreads) s += loss[i];
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  const double term = weight * ratio(sums[0], count);
  a[kMetricTotalLoss] += term;
  a[kMetricNonFinite] += !isfinite(term);
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void AccumulatePretrainMetrics::cuda(Context& ctx) const {
  check_dtype(gen_loss, DType::F32, "accumulate_pretrain_metrics gen_loss (cuda)");
  cuda::accumulate_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      gen_loss.ptr<float>(), argmax.ptr<int32_t>(), original.ptr<int32_t>(), weights.ptr<float>(),
      counts.ptr<float>(), disc_weight, acc.ptr<double>(), gen_loss.numel());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void AccumulateMlmMetrics::cuda(Context& ctx) const {
  check_dtype(loss, DType::F32, "accumulate_mlm_metrics loss (cuda)");
  cuda::accumulate_mlm_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      loss.ptr<float>(), argmax.ptr<int32_t>(), labels.ptr<int32_t>(), weights.ptr<float>(),
      acc.ptr<double>(), loss.numel());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void AccumulateReinforceMetrics::cuda(Context& ctx) const {
  check_dtype(reward, DType::F32, "accumulate_reinforce_metrics reward (cuda)");
  cuda::accumulate_reinforce_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      reward.ptr<float>(), baseline_loss.ptr<float>(), weights.ptr<float>(), acc.ptr<double>(),
      reward.numel());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void RecordGradNorm::cuda(Context& ctx) const {
  cuda::record_grad_norm_kernel<<<1, 1, 0, ctx.stream()>>>(norm.ptr<float>(), acc.ptr<double>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void AccumulateLoss::cuda(Context& ctx) const {
  check_dtype(loss, DType::F32, "accumulate_loss loss (cuda)");
  cuda::accumulate_loss_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      loss.ptr<float>(), loss.numel(), weight, count, acc.ptr<double>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
