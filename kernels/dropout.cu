// dropout kernels: one thread per 8 consecutive elements (16-byte loads and stores for bf16, two
// for f32) when the count is a multiple of 8 and the pointers are 16-byte aligned; one Philox call
// yields the keep bits of 4 elements when the first index is a multiple of 4 (two straddled blocks
// otherwise). A scalar
// grid-stride kernel covers the rest. Memory-bound: 2 * sizeof(T) bytes per element.
#include "kernels/cuda_common.cuh"
#include "kernels/dropout.h"

namespace electra::cuda {
namespace {

constexpr int kVec = 8;
constexpr int kThreads = 256;

// keep[j] for elements index0 .. index0 + 7: two Philox blocks when index0 is 4-aligned (three
// otherwise), words picked without runtime indexing (dropout_keep4).
__device__ __forceinline__ void keep8(const RngStream& stream, uint64_t index0, float p,
                                      bool keep[kVec]) {
  const uint32_t bits = dropout_keep4(stream, index0, p) | dropout_keep4(stream, index0 + 4, p)
                                                               << 4;
  for (int j = 0; j < kVec; ++j) keep[j] = (bits >> j) & 1u;
}

template <class T>
__global__ void dropout_vec_kernel(const T* in, T* out, int64_t n8, DropoutSite site, float scale) {
  site.stream = site.stream.resolved();  // the step may live in device memory (engine/philox.h)
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n8) return;
  bool keep[kVec];
  keep8(site.stream, site.offset + static_cast<uint64_t>(i) * kVec, site.p, keep);
  constexpr int kPack = Pack<T>::kSize;
  for (int p = 0; p < kVec / kPack; ++p) {
    Pack<T> pack = load_pack(in + i * kVec + p * kPack);
    for (int j = 0; j < kPack; ++j) {
      pack.v[j] = from_float<T>(keep[p * kPack + j] ? to_float(pack.v[j]) * scale : 0.0f);
    }
    store_pack(out + i * kVec + p * kPack, pack);
  }
}

template <class T>
__global__ void dropout_scalar_kernel(const T* in, T* out, int64_t n, DropoutSite site,
                                      float scale) {
  site.stream = site.stream.resolved();  // the step may live in device memory (engine/philox.h)
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const bool keep = dropout_keep(site.stream, site.offset + static_cast<uint64_t>(i), site.p);
    out[i] = from_float<T>(keep ? to_float(in[i]) * scale : 0.0f);
  }
}

template <class T>
void launch(Context& ctx, const T* in, T* out, int64_t n, const DropoutSite& site) {
  if (n == 0) return;
  const float scale = 1.0f / (1.0f - site.p);
  if (vectorizable(n, {in, out})) {
    dropout_vec_kernel<<<ceil_div(n / kVec, kThreads), kThreads, 0, ctx.stream()>>>(
        in, out, n / kVec, site, scale);
  } else {
    const int64_t blocks = std::min<int64_t>(ceil_div(n, kThreads), 65535);
    dropout_scalar_kernel<<<blocks, kThreads, 0, ctx.stream()>>>(in, out, n, site, scale);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void Dropout::cuda(Context& ctx) const {
  cuda::dispatch_activation(x, kName, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ctx, static_cast<const T*>(x.data), static_cast<T*>(y.data), x.numel(), site);
  });
}

}  // namespace electra
