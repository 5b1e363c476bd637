// softmax_xent at the generator's MLM shapes (rows = batch x max_predictions, V = 30522, bf16 and
// f32 logits; row stride 30592 as the model pads it, and 30522, so that one run times the kernel's
// 16-byte and one-column-a-lane paths): the cases of test/kernels/softmax_xent_cases.cpp run by
// bench/op_bench.cuh, ours
// (one block per row: max, sum + sample weights, the search and dlogits) against a plain-CUDA
// baseline of four kernels (row max, row sum of exp, loss + dlogits, and the same inverse-CDF
// sample with its own max and total and a shared-memory scan per 512 columns), each reading the
// row again. Roofline bytes: the logits read once and the dlogits written once. Repeated calls run
// on the previous call's dlogits: finite values, the same work.
#include "kernels/cuda_common.cuh"
#include "kernels/softmax_sample.h"
#include "kernels/softmax_xent.h"
#include "op_bench.cuh"

using namespace electra;

namespace {

constexpr int kThreads = 512;

template <class T>
__global__ void row_max_kernel(const T* x, int64_t stride, int v, float* out) {
  __shared__ float scratch[32];
  float m = -INFINITY;
  for (int j = threadIdx.x; j < v; j += kThreads)
    m = fmaxf(m, cuda::to_float(x[blockIdx.x * stride + j]));
  m = cuda::block_max(m, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = m;
}

template <class T>
__global__ void row_sum_kernel(const T* x, int64_t stride, int v, const float* max, float* out) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (int j = threadIdx.x; j < v; j += kThreads) {
    s += expf(cuda::to_float(x[blockIdx.x * stride + j]) - max[blockIdx.x]);
  }
  s = cuda::block_sum(s, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// The sample of kernels/softmax_sample.h, naively: the row's max, the total weight by a
// shared-memory tree, then tiles of 512 columns, each scanned in shared memory (Hillis-Steele, two
// syncs a step), up to the tile that holds the target. A row that weighs nothing samples 0.
template <class T>
__global__ void sample_kernel(const T* x, int64_t stride, int v, RngStream stream, float c,
                              int32_t* sample) {
  __shared__ float scratch[32];
  __shared__ uint64_t scan[kThreads];
  const int t = threadIdx.x;
  const T* row = x + blockIdx.x * stride;
  float max = -INFINITY;
  for (int j = t; j < v; j += kThreads) max = fmaxf(max, cuda::to_float(row[j]));
  max = cuda::block_max(max, scratch);
  uint64_t weight = 0;
  for (int j = t; j < v; j += kThreads) weight += sample_weight(cuda::to_float(row[j]), max, c);
  scan[t] = weight;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) scan[t] += scan[t + half];
    __syncthreads();
  }
  const uint64_t total = scan[0];
  if (t == 0 && total == 0) sample[blockIdx.x] = 0;
  const uint64_t target = sample_target(total, stream.bits(blockIdx.x));
  uint64_t below = 0;
  for (int tile = 0; tile < v && total != 0; tile += kThreads) {
    __syncthreads();  // scan[] is still being read
    const int j = tile + t;
    scan[t] = j < v ? sample_weight(cuda::to_float(row[j]), max, c) : 0;
    __syncthreads();
    for (int offset = 1; offset < kThreads; offset *= 2) {
      const uint64_t y = t >= offset ? scan[t - offset] : 0;
      __syncthreads();
      scan[t] += y;
      __syncthreads();
    }
    const uint64_t before = below + (t == 0 ? 0 : scan[t - 1]);
    if (before <= target && target < below + scan[t]) sample[blockIdx.x] = j;
    below += scan[kThreads - 1];
    if (below > target) break;  // the same in every thread
  }
}

template <class T>
__global__ void loss_grad_kernel(T* x, int64_t stride, int v, const int32_t* labels,
                                 const float* weights, float scale, const float* max,
                                 const float* sum, float* loss) {
  const int64_t row = blockIdx.x;
  const float lse = max[row] + logf(sum[row]), w = weights[row];
  if (threadIdx.x == 0) loss[row] = w * (lse - cuda::to_float(x[row * stride + labels[row]]));
  __syncthreads();
  for (int j = threadIdx.x; j < stride; j += kThreads) {
    const float p = j < v ? expf(cuda::to_float(x[row * stride + j]) - lse) : 0.0f;
    x[row * stride + j] = cuda::from_float<T>(w * scale * (p - (j == labels[row] ? 1.0f : 0.0f)));
  }
}

template <class T>
void baseline(Context& ctx, const Tensor& logits, const Tensor& labels, const Tensor& weights,
              const SoftmaxXentParams& p, const Tensor& loss, const Tensor& sample,
              const Tensor& scratch) {
  const int64_t m = logits.dim(0), stride = logits.dim(1);
  T* x = static_cast<T*>(logits.data);
  float* max = scratch.ptr<float>();
  float* sum = max + m;
  const int v = static_cast<int>(p.vocab);
  sample_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(
      x, stride, v, p.stream, sample_exp2_scale(p.temperature), sample.ptr<int32_t>());
  row_max_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(x, stride, v, max);
  row_sum_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(x, stride, v, max, sum);
  loss_grad_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(x, stride, v, labels.ptr<int32_t>(),
                                                        weights.ptr<float>(), p.scale.value, max,
                                                        sum, loss.ptr<float>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

int main() {
  const std::vector<bench::Baseline> baselines = {
      {"softmax_xent", bench::Pass::kForward, "baseline_4pass",
       [](Context& ctx, const test::Args& a) {
         const Tensor& logits = a["logits"];
         // The parameters of test/kernels/softmax_xent_cases.cpp's benchmark cases.
         SoftmaxXentParams p;
         p.vocab = 30522;  // of a row stride of 30522 or 30592
         p.scale = 1.0f / static_cast<float>(logits.dim(0));
         p.stream = RngStream{1, RngPurpose::kSample, 0, 0};
         if (a.act() == DType::F32) {
           baseline<float>(ctx, logits, a["labels"], a["weights"], p, a["loss"], a["sample"],
                           a["scratch"]);
         } else {
           baseline<__nv_bfloat16>(ctx, logits, a["labels"], a["weights"], p, a["loss"],
                                   a["sample"], a["scratch"]);
         }
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
