// step_scalars kernels: one thread advances the micro-step (and zeroes the few restart values at an
// update's first micro-batch); one block of kThreads sums the two
// weight vectors in f64 (strided partial sums, then a fixed shared-memory tree) and thread 0
// writes the scales. Once per micro-batch over B * N + B * T values: negligible.
#include "kernels/cuda_common.cuh"
#include "kernels/step_scalars.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void next_micro_step_kernel(const int32_t* counter, MicroStepPlan plan, StepScalars* s,
                                       double* restart, int64_t restart_size) {
  const int64_t update = *counter;
  if (restart != nullptr && s->micro == 0) {
    for (int64_t i = 0; i < restart_size; ++i) restart[i] = 0.0;
  }
  s->micro_step = static_cast<uint32_t>(update * plan.accumulation + plan.first + s->micro);
  s->micro = static_cast<uint32_t>((s->micro + 1) % plan.local);
  s->mask_prob = scheduled_mask_prob(plan.mask_rate, update);
}

// The plan as a kernel argument (std::array's members are host functions).
struct Plan {
  LossNormaliser n[kLossNormalisers];
};

__global__ void loss_normalisers_kernel(const float* first, int64_t m, const float* second,
                                        int64_t k, Plan plan, StepScalars* s) {
  __shared__ double sums[2][kThreads];
  double a = 0, b = 0;
  for (int64_t i = threadIdx.x; i < m; i += kThreads) a += first[i];
  for (int64_t i = threadIdx.x; i < k; i += kThreads) b += second[i];
  sums[0][threadIdx.x] = a;
  sums[1][threadIdx.x] = b;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      sums[0][threadIdx.x] += sums[0][threadIdx.x + stride];
      sums[1][threadIdx.x] += sums[1][threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  for (int j = 0; j < kLossNormalisers; ++j) {
    const double sum = sums[plan.n[j].over == LossNormaliser::Over::kSecond ? 1 : 0][0];
    s->normalisers[j] = __double2float_rn(
        __ddiv_rn(static_cast<double>(__fmul_rn(s->loss_scale, plan.n[j].factor)), sum));
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void NextMicroStep::cuda(Context& ctx) const {
  cuda::next_micro_step_kernel<<<1, 1, 0, ctx.stream()>>>(
      counter.ptr<int32_t>(), plan, step_scalars_of(block),
      restart.data != nullptr ? restart.ptr<double>() : nullptr, restart.numel());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void LossNormalisers::cuda(Context& ctx) const {
  cuda::Plan kernel_plan;
  for (int j = 0; j < kLossNormalisers; ++j) kernel_plan.n[j] = plan[static_cast<size_t>(j)];
  cuda::loss_normalisers_kernel<<<1, cuda::kThreads, 0, ctx.stream()>>>(
      first.ptr<float>(), first.numel(), second.ptr<float>(), second.numel(), kernel_plan,
      step_scalars_of(block));
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
