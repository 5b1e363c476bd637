// mse_loss kernel (kernels/mse_loss.h): one thread per row, grid-stride. N is the batch of a
// regression head (tens to thousands of rows), so the op is launch-bound; it stays scalar and
// elementwise (no reduction, hence deterministic). The products are evaluated in the CPU
// reference's order with no additions to contract, so f32 results equal the CPU's bit for bit.
// Memory: sizeof(T) + 4 + 4 bytes read, 4 + sizeof(T) written per row.
#include <algorithm>

#include "kernels/cuda_common.cuh"
#include "kernels/mse_loss.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1024;

template <class T>
__global__ void __launch_bounds__(kThreads)
    mse_loss_kernel(const T* predictions, const float* targets, const float* weights, float scale,
                    int64_t n, float* loss, T* dpredictions) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float diff = to_float(predictions[i]) - targets[i];
    const float w = weights[i];
    loss[i] = w * diff * diff;
    dpredictions[i] = from_float<T>(2.0f * w * scale * diff);
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void MseLoss::cuda(Context& ctx) const {
  check_dtype(loss, DType::F32, "mse_loss (cuda) loss");
  const int64_t n = predictions.numel();
  if (n == 0) return;  // a 0-block grid is an invalid launch configuration
  const int64_t blocks = std::min(cuda::ceil_div(n, cuda::kThreads), cuda::kMaxBlocks);
  cuda::dispatch_activation(predictions, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::mse_loss_kernel<T><<<blocks, cuda::kThreads, 0, ctx.stream()>>>(
        static_cast<const T*>(predictions.data), targets.ptr<float>(), weights.ptr<float>(), scale,
        n, loss.ptr<float>(), static_cast<T*>(dpredictions.data));
    ELECTRA_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace electra
