// copy_mlm kernel: one block per row. Thread 0 does the row's scalar math (copy_mlm_row, f64, as
// the CPU reference) and publishes r; then the block scales the row of dlogits by r.
#include "kernels/copy_mlm.h"
#include "kernels/cuda_common.cuh"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void __launch_bounds__(kThreads)
    copy_mlm_kernel(T* copy_logits, const int32_t* inputs, const int32_t* labels,
                    const float* weights, DeviceScalar<float> scale_in, float* loss, T* dlogits,
                    int32_t* argmax, int64_t stride) {
  __shared__ float share;
  const int64_t i = blockIdx.x;
  const float scale = scale_in.get();
  const float w = weights[i];
  if (w == 0.0f) {  // the row's dlogits are already 0
    if (threadIdx.x == 0) loss[i] = 0.0f, copy_logits[i] = from_float<T>(0.0f);
    return;
  }
  T* row = dlogits + i * stride;
  if (threadIdx.x == 0) {
    const int32_t x = inputs[i], y = labels[i], top = argmax[i];
    const bool valid = x >= 0 && x < stride;
    const double unit = static_cast<double>(w) * scale;
    const double c = to_float(copy_logits[i]);
    const CopyMlmRow r = copy_mlm_row(c, -static_cast<double>(loss[i]) / w, x == y);
    if (valid) {
      const double p_input = to_float(row[x]) / unit + (x == y);
      const double p_top = to_float(row[top]) / unit + (top == y);
      argmax[i] = copy_mlm_prediction(c, p_input, p_top, x, top);
    }
    loss[i] = valid ? static_cast<float>(w * r.loss) : NAN;  // an invalid input id: a NaN loss
    copy_logits[i] = from_float<T>(static_cast<float>(unit * r.dc));
    share = static_cast<float>(r.r);
  }
  __syncthreads();
  const float r = share;
  for (int64_t j = threadIdx.x; j < stride; j += kThreads) {
    row[j] = from_float<T>(r * to_float(row[j]));
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void CopyMlm::cuda(Context& ctx) const {
  const int64_t rows = dlogits.dim(0), stride = dlogits.dim(1);
  check_dtype(xent_loss, DType::F32, "copy_mlm (cuda) xent_loss");
  if (rows == 0) return;
  cuda::dispatch_activation(dlogits, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::copy_mlm_kernel<T><<<rows, cuda::kThreads, 0, ctx.stream()>>>(
        static_cast<T*>(copy_logits.data), inputs.ptr<int32_t>(), labels.ptr<int32_t>(),
        weights.ptr<float>(), scale, xent_loss.ptr<float>(), static_cast<T*>(dlogits.data),
        argmax.ptr<int32_t>(), stride);
    ELECTRA_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace electra
