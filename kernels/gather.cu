// gather kernels. Forward: one block per output row (b, k), threads over column groups of V
// (V = 8 with 16-byte accesses when H % 8 == 0 and the pointers are aligned, else 1).
// Backward: one thread per (slot, column group). Masked positions are distinct within a
// sequence, so each thread owns its dx row; a position that repeats (the padding slots all
// point at position 0) is owned by its first slot, whose thread adds the later slots' rows in
// slot order (a scan of the sequence's K positions, which the L1 holds) while their threads do
// nothing: the same additions in the same order as one walk of the slots, without atomics.
// Memory-bound: forward reads and writes B * K * H elements; the backward reads B * K * H of
// dout and reads and writes the same amount of dx.
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
                                       int64_t h, int64_t slots, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;  // i = (b * K + k) * groups + group
  const int64_t groups = h / V, slot = i / groups, col = (i % groups) * V;
  const int64_t b = slot / slots, k = slot % slots;
  const int32_t* seq = positions + b * slots;
  const int32_t pos = seq[k];
  if (pos < 0 || pos >= len) return;
  for (int64_t j = 0; j < k; ++j) {
    if (seq[j] == pos) return;  // slot j owns the row
  }
  T* row = dx + (b * len + pos) * h + col;
  float acc[V], d[V];
  load_vec<V>(row, acc);
  for (int64_t j = k; j < slots; ++j) {
    if (seq[j] != pos) continue;
    load_vec<V>(dout + (b * slots + j) * h + col, d);
    // Each slot's sum is rounded to T, as if stored before the next slot adds to it.
    for (int u = 0; u < V; ++u) acc[u] = to_float(from_float<T>(acc[u] + d[u]));
  }
  store_vec<V>(row, acc);
}

// accumulate = false: thread i = (b * T + t) * groups + group writes row t of sequence b: the
// slots whose position is t added in slot order from 0, each sum rounded to T as the += kernel
// rounds it (so the bits of zeroing dx and accumulating), 0 where no slot points at t.
template <class T, int V>
__global__ void gather_backward_assign_kernel(const T* dout, const int32_t* positions, T* dx,
                                              int64_t len, int64_t h, int64_t slots,
                                              int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t groups = h / V, token = i / groups, col = (i % groups) * V;
  const int64_t b = token / len, t = token % len;
  const int32_t* seq = positions + b * slots;
  float acc[V] = {}, d[V];
  for (int64_t j = 0; j < slots; ++j) {
    if (seq[j] != t) continue;
    load_vec<V>(dout + (b * slots + j) * h + col, d);
    for (int u = 0; u < V; ++u) acc[u] = to_float(from_float<T>(acc[u] + d[u]));
  }
  store_vec<V>(dx + token * h + col, acc);
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
void backward(Context& ctx, const Tensor& dout, const Tensor& positions, const Tensor& dx,
              bool accumulate) {
  const int64_t batch = dx.dim(0), len = dx.dim(1), h = dx.dim(2), slots = positions.dim(1);
  const T* d = static_cast<const T*>(dout.data);
  T* out = static_cast<T*>(dx.data);
  const int32_t* pos = positions.ptr<int32_t>();
  const int v = vectorizable(h, {d, out}) ? 8 : 1;
  // A thread per (slot, column group) adding into dx, or per (row, column group) writing it.
  const int64_t total = (accumulate ? batch * slots : batch * len) * (h / v);
  if (total == 0) return;
  const auto blocks = static_cast<unsigned>(ceil_div(total, kMaxThreads));
  auto launch = [&](auto kernel) {
    kernel<<<blocks, kMaxThreads, 0, ctx.stream()>>>(d, pos, out, len, h, slots, total);
  };
  if (accumulate) {
    v == 8 ? launch(gather_backward_kernel<T, 8>) : launch(gather_backward_kernel<T, 1>);
  } else {
    v == 8 ? launch(gather_backward_assign_kernel<T, 8>)
           : launch(gather_backward_assign_kernel<T, 1>);
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
  cuda::dispatch_activation(dx, kName, [&](auto tag) {
    cuda::backward<decltype(tag)>(ctx, dout, positions, dx, accumulate);
  });
}

}  // namespace electra
