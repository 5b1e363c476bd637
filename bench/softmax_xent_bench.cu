// softmax_xent at the generator's MLM shapes (rows = batch x max_predictions, V = 30522, bf16 and
// f32 logits): ours (one fused pass for loss + sample, one for dlogits) against a plain-CUDA
// baseline of four kernels (row max, row sum of exp, loss + dlogits, Gumbel-max sample), each
// reading the row again. Roofline bytes: the logits read once and the dlogits written once.
// Repeated calls run on the previous call's dlogits: finite values, the same work.
#include <climits>
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/cuda_common.cuh"
#include "kernels/softmax_xent.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

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

__device__ void better(float& best, int& index, float value, int j) {
  if (value > best || (value == best && j < index)) best = value, index = j;
}

template <class T>
__global__ void sample_kernel(const T* x, int64_t stride, int v, RngStream stream, float temp,
                              int32_t* sample) {
  __shared__ float values[kThreads];
  __shared__ int indices[kThreads];
  float best = -INFINITY;
  int index = INT_MAX;
  for (int j = threadIdx.x; j < v; j += kThreads) {
    const float g = gumbel(stream.bits(static_cast<uint64_t>(blockIdx.x) * v + j));
    better(best, index, add_rn(div_rn(cuda::to_float(x[blockIdx.x * stride + j]), temp), g), j);
  }
  values[threadIdx.x] = best;
  indices[threadIdx.x] = index;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      better(values[threadIdx.x], indices[threadIdx.x], values[threadIdx.x + half],
             indices[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) sample[blockIdx.x] = indices[0];
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
  sample_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(x, stride, v, p.stream, p.temperature,
                                                     sample.ptr<int32_t>());
  row_max_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(x, stride, v, max);
  row_sum_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(x, stride, v, max, sum);
  loss_grad_kernel<T><<<m, kThreads, 0, ctx.stream()>>>(x, stride, v, labels.ptr<int32_t>(),
                                                        weights.ptr<float>(), p.scale.value, max,
                                                        sum, loss.ptr<float>());
  ELECTRA_CUDA_CHECK_LAUNCH();
}

// Ours on the first `rows` rows against the CPU reference: exits non-zero on a mismatch.
bool validate(Context& gpu, Arena& arena, DType dtype, int64_t rows, int64_t v) {
  const size_t mark = arena.mark();
  std::vector<float> x = test::random_vector<float>(rows * v, 3, -8, 8);
  if (dtype == DType::BF16) {
    for (float& f : x) f = bf16_to_float(float_to_bf16(f));
  }
  const std::vector<int32_t> labels = test::random_ints(rows, 4, 0, static_cast<int32_t>(v - 1));
  const std::vector<float> weights(rows, 1.0f);
  SoftmaxXentParams params;
  params.vocab = v;
  params.scale = 1.0f / rows;
  params.stream = RngStream{1, RngPurpose::kGumbel, 0, 0};
  const Tensor logits = dtype == DType::F32 ? test::upload(gpu, arena, x, {rows, v})
                                            : test::upload_bf16(gpu, arena, x, {rows, v});
  const Tensor loss = arena.alloc<float>({rows});
  const Tensor sample = arena.alloc(DType::I32, {rows});
  const Tensor argmax = arena.alloc(DType::I32, {rows});
  run_op(gpu, SoftmaxXent{.logits = Out(logits),
                          .labels = test::upload(gpu, arena, labels, {rows}),
                          .weights = test::upload(gpu, arena, weights, {rows}),
                          .params = params,
                          .loss = Out(loss),
                          .sample = Out(sample),
                          .argmax = Out(argmax)});
  Context cpu = Context::cpu();
  std::vector<int32_t> l = labels, s(rows), a(rows);
  std::vector<float> w = weights, ref_loss(rows);
  run_op(cpu, SoftmaxXent{.logits = Out(Tensor::view_of(x.data(), Device::CPU, {rows, v})),
                          .labels = Tensor::view_of(l.data(), Device::CPU, {rows}),
                          .weights = Tensor::view_of(w.data(), Device::CPU, {rows}),
                          .params = params,
                          .loss = Out(Tensor::view_of(ref_loss.data(), Device::CPU, {rows})),
                          .sample = Out(Tensor::view_of(s.data(), Device::CPU, {rows})),
                          .argmax = Out(Tensor::view_of(a.data(), Device::CPU, {rows}))});
  const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
  const bool ok = test::max_relative_error(test::download<float>(gpu, loss), ref_loss) < 1e-5 &&
                  test::max_relative_error(test::download_f32(gpu, logits), x) < tol &&
                  test::download<int32_t>(gpu, sample) == s &&
                  test::download<int32_t>(gpu, argmax) == a;
  arena.rewind(mark);
  return ok;
}

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  const int64_t v = 30522;
  const struct {
    const char* name;
    int64_t rows;
  } shapes[] = {{"small_128x19", 128 * 19}, {"base_256x79", 256 * 79}};
  Arena arena("bench", Device::CUDA, size_t{256} * 79 * v * 4 + (64 << 20));
  for (DType dtype : {DType::BF16, DType::F32}) {
    if (!validate(ctx, arena, dtype, 64, v)) {
      std::printf("FAILED validation against the CPU (%s)\n", dtype_name(dtype));
      return 1;
    }
    for (const auto& shape : shapes) {
      const size_t mark = arena.mark();
      const int64_t m = shape.rows;
      const Tensor logits = arena.alloc(dtype, {m, v});
      const std::vector<float> host = test::random_vector<float>(m * v, 5, -8, 8);
      if (dtype == DType::F32) {
        copy_tensor(ctx.stream(), logits,
                    Tensor::view_of(const_cast<float*>(host.data()), Device::CPU, {m, v}));
      } else {
        std::vector<bf16> rounded(host.size());
        for (size_t i = 0; i < host.size(); ++i) rounded[i] = float_to_bf16(host[i]);
        copy_tensor(ctx.stream(), logits, Tensor::view_of(rounded.data(), Device::CPU, {m, v}));
      }
      const Tensor labels =
          test::upload(ctx, arena, test::random_ints(m, 6, 0, static_cast<int32_t>(v - 1)), {m});
      const Tensor weights = test::upload(ctx, arena, std::vector<float>(m, 1.0f), {m});
      const Tensor loss = arena.alloc<float>({m});
      const Tensor sample = arena.alloc(DType::I32, {m});
      const Tensor argmax = arena.alloc(DType::I32, {m});
      const Tensor scratch = arena.alloc<float>({2 * m});
      SoftmaxXentParams params;
      params.vocab = v;
      params.scale = 1.0f / m;
      params.stream = ctx.rng(RngPurpose::kGumbel, 0);
      const double bytes = 2.0 * m * v * dtype_size(dtype);
      const std::string op = std::string("softmax_xent_") + dtype_name(dtype);
      const double ours = bench::time_median_ms(ctx, [&] {
        run_op(ctx, SoftmaxXent{.logits = Out(logits),
                                .labels = labels,
                                .weights = weights,
                                .params = params,
                                .loss = Out(loss),
                                .sample = Out(sample),
                                .argmax = Out(argmax)});
      });
      bench::report(ctx, op, shape.name, "ours", ours, bytes, 0);
      const double base = bench::time_median_ms(ctx, [&] {
        if (dtype == DType::F32) {
          baseline<float>(ctx, logits, labels, weights, params, loss, sample, scratch);
        } else {
          baseline<__nv_bfloat16>(ctx, logits, labels, weights, params, loss, sample, scratch);
        }
      });
      bench::report(ctx, op, shape.name, "baseline_4pass", base, bytes, 0);
      arena.rewind(mark);
    }
  }
  return 0;
}
