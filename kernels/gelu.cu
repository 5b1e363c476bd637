// bias + GELU kernels. Launch shape (forward and backward): a 2-D grid, x over column tiles,
// y over blocks of R = bias_gelu_rows_per_block(N) rows; a block is blockDim.x column threads of
// V elements each (V = 8 with 16-byte accesses when H % 8 == 0 and the pointers are aligned, else
// 1) times blockDim.y row groups, so that a narrow layer (the generator's H = 256: 32 column
// threads) still has several warps a block. Row group y of a block walks its contiguous share of
// the block's rows, c rows at a time (the rows a thread has in flight, below); a thread loads the
// bias once. The backward thread sums its column's dx over its rows, the row
// groups' sums are added in group order into workspace[blockIdx.y, :] (at most 512 row blocks,
// kernels/param_grad_rows.h), and the blocks that arrive last add those partials into db in a
// fixed order in the same launch (kernels/column_sum.cuh; deterministic, no float atomics: the
// order depends on N, H and, through the backward's row groups at 4 rows, the device's SM count:
// the same bits on one kind of GPU, not across kinds).
// Memory-bound: forward 2, backward 3 activation reads/writes per element (plus N / R * H f32
// partials, written once and read once).
#include <limits>

#include "kernels/column_sum.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/gelu.h"
#include "kernels/gelu_erfc.cuh"
#include "kernels/sm_count.h"

namespace electra::cuda {
namespace {

// Rows a thread loads before it computes and stores the first of them. The stores to dx / y may
// alias the next rows' inputs as far as the compiler knows, so with one row it issues a row's
// loads only after the previous row's store: one memory latency per row. The forward always takes
// 4 rows (64 registers at bf16 on sm_90, nvcc 13.0; H100, 2026-11-27: 0.0540 -> 0.0482 ms at 16384
// x 1024, 0.1401 -> 0.1241 at x 3072, 0.1415 -> 0.1447 at x 4096). The backward's 4 rows take 128
// registers, so an SM holds at most 16 of its warps (bf16; f32's take 140, so f32 always takes 1
// row); where the launch has more warps than that at one row group a block (Base and Large: 0.2993
// -> 0.3221 and 0.3152 -> 0.3523 ms) it takes 1 row, where it has fewer (Small's 1024: 0.1428 ->
// 0.1341 ms; the generator's 256) 4, with as many row groups as keep the launch within those 16
// warps an SM. Row groups: the generator's FFN (H = 256) has 32 column threads, so one row group a
// block made one-warp blocks, 4 warps an SM, and its backward moved 242 GB/s on the same profile.
constexpr int kRowsInFlight = 4;
constexpr int kBackwardWarpsPerSmAt4Rows = 65536 / (kWarpSize * 128);  // the register file
constexpr int kMaxThreads = 256;

using gelu_erfc::gelu;
using gelu_erfc::gelu_grad;

// The rows of row group threadIdx.y in block row blockIdx.y: the contiguous share [first, end) of
// the block row's `rows` rows, `share` rows a group (a multiple of the rows a step takes). Row
// indices are 32-bit (the launchers check N) and the host divides: with 64-bit row arithmetic
// the backward at 4 rows took 139 registers on sm_90 instead of 128.
struct GroupRows {
  int first, end;
};

__device__ __forceinline__ GroupRows group_rows(int n, int rows, int share) {
  const int begin = blockIdx.y * rows;
  const int first = begin + threadIdx.y * share;
  return {first, min(min(n, begin + rows), first + share)};
}

template <class T, int V>
__global__ void bias_gelu_forward_kernel(const T* x, const float* b, T* y, int n, int64_t h,
                                         int rows, int share) {
  const int64_t col = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) * V;
  if (col >= h) return;
  float bias[V], v[kRowsInFlight][V];
  load_vec<V>(b + col, bias);
  const GroupRows g = group_rows(n, rows, share);
  for (int r0 = g.first; r0 < g.end; r0 += kRowsInFlight) {
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) {
      if (r0 + k < g.end) load_vec<V>(x + int64_t{r0 + k} * h + col, v[k]);
    }
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) {
      if (r0 + k >= g.end) continue;
      for (int j = 0; j < V; ++j) v[k][j] = gelu(v[k][j] + bias[j]);
      store_vec<V>(y + int64_t{r0 + k} * h + col, v[k]);
    }
  }
}

// b == nullptr: x already holds u = x + b. Block (x, p) writes dx of its rows and columns and
// its column sums of dx into partial row p; the last blocks of column tile x add the partial rows
// into db (kernels/column_sum.cuh).
template <class T, int V, int kRows>
__global__ void bias_gelu_backward_kernel(const T* dy, const T* x, const float* b, T* dx,
                                          ColumnTickets tickets, float* db, int n, int64_t h,
                                          int rows, int share) {
  // Row group y > 0's sums, [y][j][column thread]: added into group 0's in group order.
  __shared__ float group_sums[kMaxThreads * V];
  const int64_t c0 = blockIdx.x * static_cast<int64_t>(blockDim.x) * V;
  const int64_t col = c0 + threadIdx.x * int64_t{V};
  const bool in_range = col < h;  // no return: every thread takes part in the tickets below
  float sum[V] = {};
  if (in_range) {
    float bias[V] = {};
    if (b != nullptr) load_vec<V>(b + col, bias);
    const GroupRows r = group_rows(n, rows, share);
    for (int r0 = r.first; r0 < r.end; r0 += kRows) {
      float u[kRows][V], g[kRows][V];
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        if (r0 + k >= r.end) continue;
        load_vec<V>(x + int64_t{r0 + k} * h + col, u[k]);
        load_vec<V>(dy + int64_t{r0 + k} * h + col, g[k]);
      }
#pragma unroll
      for (int k = 0; k < kRows; ++k) {  // a group's rows in order
        if (r0 + k >= r.end) continue;
        for (int j = 0; j < V; ++j) {
          g[k][j] *= gelu_grad(u[k][j] + bias[j]);
          sum[j] += g[k][j];
        }
        store_vec<V>(dx + int64_t{r0 + k} * h + col, g[k]);
      }
    }
  }
  if (blockDim.y > 1) {
    const int cols = blockDim.x;
    if (threadIdx.y > 0) {
      for (int j = 0; j < V; ++j) group_sums[(threadIdx.y * V + j) * cols + threadIdx.x] = sum[j];
    }
    __syncthreads();
    if (threadIdx.y == 0) {
      for (int y = 1; y < static_cast<int>(blockDim.y); ++y) {
        for (int j = 0; j < V; ++j) sum[j] += group_sums[(y * V + j) * cols + threadIdx.x];
      }
    }
  }
  if (in_range && threadIdx.y == 0) {
    for (int j = 0; j < V; ++j) tickets.partial[blockIdx.y * h + col + j] = sum[j];
  }
  finish_column_tile(tickets, blockIdx.y, blockIdx.x, c0,
                     std::min<int64_t>(h, c0 + static_cast<int64_t>(blockDim.x) * V),
                     [&](int64_t c, float total) { db[c] += total; });
}

// The launch: column tiles of at most kMaxThreads threads, balanced (H = 3072 in bf16 is two
// tiles of 192, not 256 and 128), times row groups: as many as fill the block to kMaxThreads
// threads, have `chunk` rows each in a block row, and keep the launch within `max_warps` warps.
struct Launch {
  dim3 grid, block;
  int rows, share;  // of a block row, of a row group
  int64_t warps() const { return int64_t{grid.x} * grid.y * block.y * (block.x / kWarpSize); }
};

Launch launch_for(int64_t n, int64_t h, int v, int chunk, int64_t max_warps) {
  // At most 2^30 - 1: a group's end (first + share) and the last step's r0 + kRows stay in int.
  ELECTRA_CHECK(n < (int64_t{1} << 30), "bias_gelu: ", n, " rows (at most 2^30 - 1)");
  const int64_t groups = ceil_div(h, v);
  const int64_t tiles = ceil_div(groups, kMaxThreads);
  const int64_t cols = ceil_div(ceil_div(groups, tiles), kWarpSize) * kWarpSize;
  const int64_t rows = bias_gelu_rows_per_block(n);
  const int64_t blocks = tiles * ceil_div(n, rows);
  const int64_t row_groups =
      std::max<int64_t>(1, std::min({kMaxThreads / cols, ceil_div(std::min(rows, n), chunk),
                                     max_warps / (blocks * (cols / kWarpSize))}));
  return {dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(ceil_div(n, rows))),
          dim3(static_cast<unsigned>(cols), static_cast<unsigned>(row_groups)),
          static_cast<int>(rows),
          static_cast<int>(ceil_div(ceil_div(rows, row_groups), chunk) * chunk)};
}

template <class T>
void forward(Context& ctx, const Tensor& x, const Tensor& b, const Tensor& y) {
  const int64_t n = x.dim(0), h = x.dim(1);
  if (n == 0 || h == 0) return;
  const T* in = static_cast<const T*>(x.data);
  T* out = static_cast<T*>(y.data);
  const float* bias = b.ptr<float>();
  const int64_t rows = bias_gelu_rows_per_block(n);
  const bool v8 = vectorizable(h, {in, out, bias});
  const Launch l = launch_for(n, h, v8 ? 8 : 1, kRowsInFlight, std::numeric_limits<int64_t>::max());
  auto launch = [&](auto kernel) {
    kernel<<<l.grid, l.block, 0, ctx.stream()>>>(in, bias, out, static_cast<int>(n), h, l.rows,
                                                 l.share);
  };
  if (v8) {
    launch(bias_gelu_forward_kernel<T, 8>);
  } else {
    launch(bias_gelu_forward_kernel<T, 1>);
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
  // 4 rows where one row group a block fits the warps an SM holds of that kernel (see above).
  const int64_t budget = int64_t{kBackwardWarpsPerSmAt4Rows} * sm_count();
  // The 4-row kernel exists at bf16 only (at f32 it takes 140 registers, above).
  constexpr bool kHasFourRows = sizeof(T) == 2;
  const bool four_rows =
      kHasFourRows && v == 8 && launch_for(n, h, v, kRowsInFlight, 0).warps() <= budget;
  const Launch l = four_rows ? launch_for(n, h, v, kRowsInFlight, budget)
                             : launch_for(n, h, v, 1, std::numeric_limits<int64_t>::max());
  const ColumnTickets tickets =
      column_tickets(ctx, workspace.ptr<float>(), ceil_div(n, rows), h, h, l.grid.x);
  auto launch = [&](auto kernel) {
    kernel<<<l.grid, l.block, 0, ctx.stream()>>>(g, in, bias, out, tickets, db.ptr<float>(),
                                                 static_cast<int>(n), h, l.rows, l.share);
  };
  if (four_rows) {
    if constexpr (kHasFourRows) launch(bias_gelu_backward_kernel<T, 8, kRowsInFlight>);
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
