// gather kernels. Forward: one block per output row (b, k), threads over column groups of V
// (V = 8 with 16-byte accesses when H % 8 == 0 and the pointers are aligned, else 1).
// Backward: a 2-D grid of (column groups, sequences b); each thread walks the K slots of its
// sequence in slot order and adds dout into dx at its columns, so repeated positions accumulate in
// a fixed order without atomics. Memory-bound: forward reads and writes B * K * H elements; the
// backward reads B * K * H of dout and reads and writes the same amount of dx.
#include "kernels/cuda_common.cuh"
#include "kernels/gather.h"

namespace electra::cuda {
namespace {

constexpr int kMaxThreads = 256;

template <class T, int V>
__global__ void gather_forward_kernel(const T* x, const int32_t* positions, T* out, int64_t len,
                                      int64_t h, int64_t slots) {
  const int64_t slot = blockIdx.x;  // b * K + k
  const int32_t pos = positions[slot];
  const int64_t b = slot / slots;
  const bool valid = pos >= 0 && pos < len;
  float v[V];
  for (int64_t c = threadIdx.x * V; c < h; c += static_cast<int64_t>(blockDim.x) * V) {
    if (valid) {
      load_vec<V>(x + (b * len + pos) * h + c, v);
    } else {
      for (int j = 0; j < V; ++j) v[j] = __int_as_float(0x7fc00000);  // NaN marks a bad position
    }
    store_vec<V>(out + slot * h + c, v);
  }
}

template <class T, int V>
__global__ void gather_backward_kernel(const T* dout, const int32_t* positions, T* dx, int64_t len,
                                       int64_t h, int64_t slots) {
  const int64_t col = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) * V;
  const int64_t b = blockIdx.y;
  if (col >= h) return;
  float d[V], acc[V];
  for (int64_t k = 0; k < slots; ++k) {
    const int32_t pos = positions[b * slots + k];
    if (pos < 0 || pos >= len) continue;
    T* row = dx + (b * len + pos) * h + col;
    load_vec<V>(dout + (b * slots + k) * h + col, d);
    load_vec<V>(row, acc);
    for (int j = 0; j < V; ++j) acc[j] += d[j];
    store_vec<V>(row, acc);
  }
}

int threads_for(int64_t groups) {
  return static_cast<int>(std::min<int64_t>(kMaxThreads, ceil_div(groups, kWarpSize) * kWarpSize));
}

template <class T>
void forward(Context& ctx, const Tensor& x, const Tensor& positions, const Tensor& out) {
  const int64_t batch = x.dim(0), len = x.dim(1), h = x.dim(2), slots = positions.dim(1);
  if (batch * slots == 0 || h == 0) return;
  const T* in = static_cast<const T*>(x.data);
  T* y = static_cast<T*>(out.data);
  const int32_t* pos = positions.ptr<int32_t>();
  if (vectorizable(h, {in, y})) {
    gather_forward_kernel<T, 8>
        <<<batch * slots, threads_for(h / 8), 0, ctx.stream()>>>(in, pos, y, len, h, slots);
  } else {
    gather_forward_kernel<T, 1>
        <<<batch * slots, threads_for(h), 0, ctx.stream()>>>(in, pos, y, len, h, slots);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class T>
void backward(Context& ctx, const Tensor& dout, const Tensor& positions, const Tensor& dx) {
  const int64_t batch = dx.dim(0), len = dx.dim(1), h = dx.dim(2), slots = positions.dim(1);
  if (batch * slots == 0 || h == 0) return;
  const T* d = static_cast<const T*>(dout.data);
  T* out = static_cast<T*>(dx.data);
  const int32_t* pos = positions.ptr<int32_t>();
  const int v = vectorizable(h, {d, out}) ? 8 : 1;
  const int threads = threads_for(ceil_div(h, v));
  const dim3 grid(static_cast<unsigned>(ceil_div(ceil_div(h, v), threads)),
                  static_cast<unsigned>(batch));
  if (v == 8) {
    gather_backward_kernel<T, 8><<<grid, threads, 0, ctx.stream()>>>(d, pos, out, len, h, slots);
  } else {
    gather_backward_kernel<T, 1><<<grid, threads, 0, ctx.stream()>>>(d, pos, out, len, h, slots);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void GatherForward::cuda(Context& ctx) const {
  cuda::dispatch_activation(
      x, kName, [&](auto tag) { cuda::forward<decltype(tag)>(ctx, x, positions, out); });
}

void GatherBackward::cuda(Context& ctx) const {
  cuda::dispatch_activation(
      dx, kName, [&](auto tag) { cuda::backward<decltype(tag)>(ctx, dout, positions, dx); });
}

}  // namespace electra
