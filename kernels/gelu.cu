// bias + GELU kernels. Launch shape (forward and backward): a 2-D grid, x over column groups of V
// elements (V = 8 with 16-byte accesses when H % 8 == 0 and the pointers are aligned, else 1), y
// over blocks of R = bias_gelu_rows_per_block(N) rows; a thread walks its R rows, so the bias is
// loaded once per thread. The backward thread also sums its column's dx over its rows into
// workspace[blockIdx.y, :] (at most 512 row blocks, kernels/param_grad_rows.h); the blocks that
// arrive last add those partials into db in a fixed order in the same launch
// (kernels/column_sum.cuh; deterministic, no float atomics).
// Memory-bound: forward 2, backward 3 activation reads/writes per element (plus N / R * H f32
// partials, written once and read once); a thread has up to kRowsInFlight rows' loads in flight.
#include "kernels/column_sum.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/gelu.h"
#include "kernels/sm_count.h"

namespace electra::cuda {
namespace {

// Rows a thread loads before it computes and stores the first of them. The stores to dx / y may
// alias the next rows' inputs as far as the compiler knows, so with one row it issues a row's
// loads only after the previous row's store: one memory latency per row, and the generator's
// FFN (H = 256: 32 threads a block, 4 warps an SM) moved 242 GB/s in the backward on the
// 2026-11-27 H100 profile. The forward always takes 4 rows (57 registers; H100, same run:
// 0.0540 -> 0.0482 ms at 16384 x 1024, 0.1401 -> 0.1241 at x 3072, 0.1415 -> 0.1447 at x 4096).
// The backward's 4 rows take 128 registers, so an SM holds at most 16 of its warps; where the
// launch has more warps than that (Base and Large: 0.2993 -> 0.3221 and 0.3152 -> 0.3523 ms) it
// takes 1 row, where it has fewer (Small's 1024: 0.1428 -> 0.1341 ms; the generator's 256) 4.
constexpr int kRowsInFlight = 4;
constexpr int kBackwardWarpsPerSmAt4Rows = 65536 / (kWarpSize * 128);  // the register file

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// Phi(u) = 0.5 erfc(-u / sqrt 2), accurate in the left tail (1 + erf would cancel there).
__device__ __forceinline__ float normal_cdf(float u) {
  return 0.5f * erfcf(-u * kInvSqrt2);
}

__device__ __forceinline__ float gelu(float u) {
  return u * normal_cdf(u);
}

__device__ __forceinline__ float gelu_grad(float u) {
  return normal_cdf(u) + u * expf(-0.5f * u * u) * kInvSqrt2Pi;
}

// V consecutive elements of T as floats (16-byte packs when V > 1).
template <class T, int V>
__global__ void bias_gelu_forward_kernel(const T* x, const float* b, T* y, int64_t n, int64_t h,
                                         int64_t rows) {
  const int64_t col = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) * V;
  if (col >= h) return;
  float bias[V], v[kRowsInFlight][V];
  load_vec<V>(b + col, bias);
  const int64_t end = std::min<int64_t>(n, (blockIdx.y + 1) * rows);
  for (int64_t r0 = blockIdx.y * rows; r0 < end; r0 += kRowsInFlight) {
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) {
      if (r0 + k < end) load_vec<V>(x + (r0 + k) * h + col, v[k]);
    }
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) {
      if (r0 + k >= end) continue;
      for (int j = 0; j < V; ++j) v[k][j] = gelu(v[k][j] + bias[j]);
      store_vec<V>(y + (r0 + k) * h + col, v[k]);
    }
  }
}

// b == nullptr: x already holds u = x + b. Block (x, p) writes dx of its rows and columns and
// its column sums of dx into partial row p; the last blocks of column tile x add the partial rows
// into db (kernels/column_sum.cuh).
template <class T, int V, int kRows>
__global__ void bias_gelu_backward_kernel(const T* dy, const T* x, const float* b, T* dx,
                                          ColumnTickets tickets, float* db, int64_t n, int64_t h,
                                          int64_t rows) {
  const int64_t c0 = blockIdx.x * static_cast<int64_t>(blockDim.x) * V;
  const int64_t col = c0 + threadIdx.x * int64_t{V};
  if (col < h) {  // no return: every thread takes part in the tickets below
    float bias[V] = {}, sum[V] = {}, u[kRows][V], g[kRows][V];
    if (b != nullptr) load_vec<V>(b + col, bias);
    const int64_t end = std::min<int64_t>(n, (blockIdx.y + 1) * rows);
    for (int64_t r0 = blockIdx.y * rows; r0 < end; r0 += kRows) {
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        if (r0 + k >= end) continue;
        load_vec<V>(x + (r0 + k) * h + col, u[k]);
        load_vec<V>(dy + (r0 + k) * h + col, g[k]);
      }
#pragma unroll
      for (int k = 0; k < kRows; ++k) {  // rows in order: the sums' order is the same at any kRows
        if (r0 + k >= end) continue;
        for (int j = 0; j < V; ++j) {
          g[k][j] *= gelu_grad(u[k][j] + bias[j]);
          sum[j] += g[k][j];
        }
        store_vec<V>(dx + (r0 + k) * h + col, g[k]);
      }
    }
    for (int j = 0; j < V; ++j) tickets.partial[blockIdx.y * h + col + j] = sum[j];
  }
  finish_column_tile(tickets, blockIdx.y, blockIdx.x, c0,
                     std::min<int64_t>(h, c0 + static_cast<int64_t>(blockDim.x) * V),
                     [&](int64_t c, float total) { db[c] += total; });
}

constexpr int kMaxThreads = 256;

// Threads per block: enough column groups for one row, rounded up to a warp, at most 256.
dim3 grid_for(int64_t n, int64_t h, int v, int& threads) {
  const int64_t groups = ceil_div(h, v);
  threads =
      static_cast<int>(std::min<int64_t>(kMaxThreads, ceil_div(groups, kWarpSize) * kWarpSize));
  return dim3(static_cast<unsigned>(ceil_div(groups, threads)),
              static_cast<unsigned>(ceil_div(n, bias_gelu_rows_per_block(n))));
}

template <class T>
void forward(Context& ctx, const Tensor& x, const Tensor& b, const Tensor& y) {
  const int64_t n = x.dim(0), h = x.dim(1);
  if (n == 0 || h == 0) return;
  const T* in = static_cast<const T*>(x.data);
  T* out = static_cast<T*>(y.data);
  const float* bias = b.ptr<float>();
  const int64_t rows = bias_gelu_rows_per_block(n);
  int threads = 0;
  if (vectorizable(h, {in, out, bias})) {
    const dim3 grid = grid_for(n, h, 8, threads);
    bias_gelu_forward_kernel<T, 8><<<grid, threads, 0, ctx.stream()>>>(in, bias, out, n, h, rows);
  } else {
    const dim3 grid = grid_for(n, h, 1, threads);
    bias_gelu_forward_kernel<T, 1><<<grid, threads, 0, ctx.stream()>>>(in, bias, out, n, h, rows);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class T>
void backward(Context& ctx, const Tensor& dy, const Tensor& x, const float* bias, const Tensor& dx,
              const Tensor& db, const Tensor& workspace, const char* op) {
  const int64_t n = x.dim(0), h = x.dim(1);
  if (n == 0 || h == 0) return;
  ELECTRA_CHECK(workspace.device == Device::CUDA && workspace.dtype == DType::F32 &&
                    workspace.numel() >= bias_gelu_backward_workspace_floats(n, h),
                op, ": workspace ", workspace.str(), " must be f32 on cuda with at least ",
                bias_gelu_backward_workspace_floats(n, h), " elements");
  const T* g = static_cast<const T*>(dy.data);
  const T* in = static_cast<const T*>(x.data);
  T* out = static_cast<T*>(dx.data);
  const int64_t rows = bias_gelu_rows_per_block(n);
  const int v = vectorizable(h, {g, in, out, bias}) ? 8 : 1;
  int threads = 0;
  const dim3 grid = grid_for(n, h, v, threads);
  const ColumnTickets tickets =
      column_tickets(ctx, workspace.ptr<float>(), ceil_div(n, rows), h, h, grid.x);
  const int64_t warps = int64_t{grid.x} * grid.y * ceil_div(threads, kWarpSize);
  const bool four_rows = warps <= int64_t{kBackwardWarpsPerSmAt4Rows} * sm_count();
  auto launch = [&](auto kernel) {
    kernel<<<grid, threads, 0, ctx.stream()>>>(g, in, bias, out, tickets, db.ptr<float>(), n, h,
                                               rows);
  };
  if (v == 8 && four_rows) {
    launch(bias_gelu_backward_kernel<T, 8, kRowsInFlight>);
  } else if (v == 8) {
    launch(bias_gelu_backward_kernel<T, 8, 1>);
  } else {
    launch(bias_gelu_backward_kernel<T, 1, 1>);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

void check_activations(const char* op, const Tensor& a, std::initializer_list<const Tensor*> rest) {
  for (const Tensor* t : rest) {
    ELECTRA_CHECK(t->dtype == a.dtype, op, " (cuda): activation ", t->str(), " differs from ",
                  a.str());
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void BiasGeluForward::cuda(Context& ctx) const {
  cuda::check_activations(kName, x, {&y});
  check_dtype(b, DType::F32, "bias_gelu_forward (cuda): b");
  cuda::dispatch_activation(x, kName,
                            [&](auto tag) { cuda::forward<decltype(tag)>(ctx, x, b, y); });
}

void BiasGeluBackward::cuda(Context& ctx) const {
  cuda::check_activations(kName, x, {&dy, &dx});
  check_dtype(b, DType::F32, "bias_gelu_backward (cuda): b");
  check_dtype(db, DType::F32, "bias_gelu_backward (cuda): db");
  cuda::dispatch_activation(x, kName, [&](auto tag) {
    cuda::backward<decltype(tag)>(ctx, dy, x, b.ptr<float>(), dx, db, workspace, kName);
  });
}

void BiasGeluBackwardPreact::cuda(Context& ctx) const {
  cuda::check_activations(kName, u, {&dy, &dx});
  check_dtype(db, DType::F32, "bias_gelu_backward_preact (cuda): db");
  cuda::dispatch_activation(u, kName, [&](auto tag) {
    cuda::backward<decltype(tag)>(ctx, dy, u, nullptr, dx, db, workspace, kName);
  });
}

}  // namespace electra
