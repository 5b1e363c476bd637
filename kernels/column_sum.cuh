// Deterministic column sums for the parameter-gradient passes (layernorm dgamma / dbeta, bias +
// GELU db, matmul bias_grad): dst[c] (+)= sum over rows r < count of src[r * stride + c].
//
// A block owns `cols` consecutive columns (a power of two <= 32, fewer for narrow matrices so
// that no thread idles, e.g. bias_grad of the discriminator's single output) and 256 / cols row
// lanes. Lane y adds rows y, y + lanes, ... in order; the lanes' sums then halve pairwise in
// shared memory (a fixed tree). The result depends only on (count, cols), never on timing: the
// same bits every run, and no atomics.
#pragma once

#include <algorithm>

#include "engine/context.h"
#include "kernels/cuda_common.cuh"

namespace electra::cuda {

constexpr int kColumnSumThreads = 256;

// Columns per block for an n-column matrix: the smallest power of two >= n, at most 32.
inline int column_sum_cols(int64_t n) {
  int cols = 1;
  while (cols < 32 && cols < n) cols *= 2;
  return cols;
}

// Sum over rows [r0, r1) of column `col` by this block's row lanes, reduced in a fixed tree; the
// total is returned to the lanes with threadIdx.y == 0. `scratch` holds kColumnSumThreads floats.
template <class T>
__device__ __forceinline__ float block_column_sum(const T* src, int64_t stride, int64_t r0,
                                                  int64_t r1, int64_t col, bool in_range,
                                                  float* scratch) {
  const int lanes = blockDim.y, lane = threadIdx.y, cols = blockDim.x;
  float sum = 0.0f;
  if (in_range) {
    for (int64_t r = r0 + lane; r < r1; r += lanes) sum += to_float(src[r * stride + col]);
  }
  scratch[lane * cols + threadIdx.x] = sum;
  for (int half = lanes / 2; half > 0; half /= 2) {
    __syncthreads();
    if (lane < half)
      scratch[lane * cols + threadIdx.x] += scratch[(lane + half) * cols + threadIdx.x];
  }
  __syncthreads();
  return scratch[threadIdx.x];
}

// One (src, dst) pair of a column-sum launch: dst[c] += sum_r src[r * stride + c].
struct ColumnSumJob {
  const float* src = nullptr;
  float* dst = nullptr;
  int64_t stride = 0;
};

// blockIdx.x: column block, blockIdx.y: job (0 or 1). Static: one copy per including .cu file.
static __global__ void column_partials_sum_kernel(ColumnSumJob first, ColumnSumJob second,
                                                  int64_t count, int64_t n) {
  __shared__ float scratch[kColumnSumThreads];
  const ColumnSumJob job = blockIdx.y == 0 ? first : second;
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const float total = block_column_sum(job.src, job.stride, 0, count, col, col < n, scratch);
  if (threadIdx.y == 0 && col < n) job.dst[col] += total;
}

// Adds the `count` partial rows of each job into its dst (n columns); `second.src` may be null.
inline void column_partials_sum(Context& ctx, const ColumnSumJob& first, const ColumnSumJob& second,
                                int64_t count, int64_t n) {
  const int cols = column_sum_cols(n);
  const dim3 grid(static_cast<unsigned>(ceil_div(n, cols)), second.src != nullptr ? 2u : 1u);
  column_partials_sum_kernel<<<grid, dim3(cols, kColumnSumThreads / cols), 0, ctx.stream()>>>(
      first, second, count, n);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra::cuda
