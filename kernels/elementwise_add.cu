// elementwise_add kernel: a grid-stride loop, one add per element (__fadd_rn / __dadd_rn: never
// contracted, the CPU's bits). Memory-bound: 12 bytes moved per f32 element.
#include "kernels/cuda_common.cuh"
#include "kernels/elementwise_add.h"

namespace electra::cuda {
namespace {

__device__ __forceinline__ float add_rn(float x, float y) {
  return __fadd_rn(x, y);
}
__device__ __forceinline__ double add_rn(double x, double y) {
  return __dadd_rn(x, y);
}

template <class T>
__global__ void elementwise_add_kernel(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = add_rn(a[i], b[i]);
  }
}

template <class T>
void launch(Context& ctx, const Tensor& a, const Tensor& b, const Tensor& out) {
  constexpr int kThreads = 256;
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t blocks = std::min<int64_t>(ceil_div(n, kThreads), 65535);
  elementwise_add_kernel<T>
      <<<blocks, kThreads, 0, ctx.stream()>>>(a.ptr<T>(), b.ptr<T>(), out.ptr<T>(), n);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void ElementwiseAdd::cuda(Context& ctx) const {
  if (out.dtype == DType::F32) {
    cuda::launch<float>(ctx, a, b, out);
  } else if (out.dtype == DType::F64) {
    cuda::launch<double>(ctx, a, b, out);
  } else {
    throw Error(str_cat("elementwise_add (cuda): takes f32 or f64, got ", out.str()));
  }
}

}  // namespace electra
