// Deterministic column sums for the parameter-gradient passes (layernorm dgamma / dbeta, bias +
// GELU db, matmul bias_grad), finished inside the launch that reads the rows: block row p of that
// launch writes partial row p (partial[p * width + c], its rows' sums), and the blocks that
// arrive last add dst[c] += the sum over the `count` partial rows. One launch, no float atomics.
//
// Order (fixed: it depends on count and lanes only, never on timing). Column c's partial rows
// form `lanes` chains: chain y adds rows y, y + lanes, y + 2 lanes, ... in order, from 0.0f; the
// chains then halve pairwise (chain y += chain y + half for half = lanes / 2, ..., 1), and chain 0
// is added into dst. lanes = column_sum_lanes(n) = kColumnSumThreads / column_sum_cols(n): the
// order of the former second launch, whose blocks of column_sum_cols(n) columns x lanes row lanes
// added exactly so, hence the same bits.
//
// Who adds: a launch's blocks cover column tiles (the columns one block writes: blockIdx.x).
// After writing its partial row of a tile, a block takes a ticket of its chain (counter
// (tile, p % lanes)); the last block of the chain adds the chain and stores its sum over the
// chain's first row (row y, which no other block reads); it then takes the tile's ticket, and the
// last chain to finish halves the chains and adds into dst (a thread a column, in registers, when
// there are at most kRegisterChains chains: every column at once). The tail is spread over `lanes`
// blocks (8 for n >= 32), not one: the FFN's db at ELECTRA-Small is 512 partial rows of 1024
// columns (2 MB), all of which one block on one SM would read alone while the rest of the GPU
// idles; a chain reads an eighth. Each ticket follows a __threadfence (the block's writes are
// visible first); the finishers read with __ldcg (from L2: L1 is not coherent). The last arrival
// re-zeroes the counter it took, so the next launch and every CUDA-graph replay find zeros
// (engine/ticket_counters.h: the context's counters, zero at its creation).
#pragma once

#include <algorithm>

#include "engine/context.h"
#include "engine/ticket_counters.h"
#include "kernels/column_sum_order.h"
#include "kernels/cuda_common.cuh"

namespace electra::cuda {

constexpr int kColumnSumThreads = 256;

// The former second launch's columns per block for an n-column sum: the smallest power of two
// >= n, at most 32 (fewer for narrow matrices so that no thread idled, e.g. bias_grad of the
// discriminator's single output).
inline int column_sum_cols(int64_t n) {
  int cols = 1;
  while (cols < 32 && cols < n) cols *= 2;
  return cols;
}

// Chains per column for an n-column sum (8 for n >= 32, up to 256 for n = 1).
inline int column_sum_lanes(int64_t n) {
  return kColumnSumThreads / column_sum_cols(n);
}

// Sum over rows [r0, r1) of column `col` by this block's row lanes (blockDim = (columns, lanes)),
// reduced in a fixed tree; the total is returned to the lanes with threadIdx.y == 0. `scratch`
// holds kColumnSumThreads floats.
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

// The partial rows of one launch and the counters its blocks take.
struct ColumnTickets {
  float* partial = nullptr;      // [count, width]: row p written by block row p
  int64_t count = 0;             // partial rows (row blocks of the launch)
  int64_t width = 0;             // columns of a partial row
  int lanes = 0;                 // chains per column (column_sum_lanes)
  uint32_t* counters = nullptr;  // lanes + 1 per column tile, zero between launches
};

// The tickets of a launch with `tiles` column tiles whose sums keep the order of an n-column sum.
inline ColumnTickets column_tickets(const Context& ctx, float* partial, int64_t count,
                                    int64_t width, int64_t n, int64_t tiles) {
  const int lanes = column_sum_lanes(n);
  ELECTRA_CHECK(tiles * (lanes + 1) <= kTicketCounters, "column sum: ", tiles,
                " column tiles need more than the context's ", kTicketCounters, " counters");
  return ColumnTickets{partial, count, width, lanes, ticket_counters(ctx)};
}

// Whether this block takes the last of `arrivals` tickets of *counter (the same answer in every
// thread; every thread calls it after its writes). The last re-zeroes the counter.
__device__ __forceinline__ bool last_arrival(uint32_t* counter, uint32_t arrivals) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    last = atomicAdd(counter, 1u) == arrivals - 1;
    if (last) {
      atomicExch(counter, 0u);
      __threadfence();  // the others' writes are read after the ticket that saw them all
    }
  }
  __syncthreads();
  return last;
}

// Chain y of columns [c0, c1), W consecutive columns per thread (W = 4: 16-byte loads), stored
// over partial row y. The row loop is unrolled so that several loads are in flight per thread.
template <int W>
__device__ __forceinline__ void add_chain(const ColumnTickets& t, int64_t y, int64_t c0,
                                          int64_t c1) {
  const int threads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int64_t c = c0 + W * int64_t{tid}; c < c1; c += W * int64_t{threads}) {
    float sum[W] = {};
#pragma unroll 8
    for (int64_t r = y; r < t.count; r += t.lanes) {
      const float* src = t.partial + r * t.width + c;
      if constexpr (W == 4) {
        const float4 v = __ldcg(reinterpret_cast<const float4*>(src));
        sum[0] += v.x;
        sum[1] += v.y;
        sum[2] += v.z;
        sum[3] += v.w;
      } else {
        sum[0] += __ldcg(src);
      }
    }
    for (int j = 0; j < W; ++j) t.partial[y * t.width + c + j] = sum[j];
  }
}

// Called by every thread of a block after the block wrote its partial row p of columns [c0, c1)
// of column tile `tile`: the chain's last block adds the chain, the tile's last chain halves the
// chains and calls add(c, total) once per column (one thread each).
template <class Add>
__device__ __forceinline__ void finish_column_tile(const ColumnTickets& t, int64_t p, int64_t tile,
                                                   int64_t c0, int64_t c1, Add&& add) {
  __shared__ float scratch[kColumnSumThreads];
  const int lanes = t.lanes;
  const int64_t y = p % lanes;
  uint32_t* counters = t.counters + tile * (lanes + 1);
  if (!last_arrival(counters + y, static_cast<uint32_t>((t.count - y + lanes - 1) / lanes))) return;
  // 16-byte loads where every row of the tile starts 16-byte aligned.
  if (reinterpret_cast<uintptr_t>(t.partial) % 16 == 0 && t.width % 4 == 0 && c0 % 4 == 0 &&
      (c1 - c0) % 4 == 0) {
    add_chain<4>(t, y, c0, c1);
  } else {
    add_chain<1>(t, y, c0, c1);
  }
  if (!last_arrival(counters + lanes, static_cast<uint32_t>(std::min<int64_t>(lanes, t.count))))
    return;
  const int threads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  if (lanes <= kRegisterChains) {
    // A thread a column, every column of the tile at once: its chains (0.0f for a chain without
    // rows) loaded into registers, then halved pairwise, chain y += chain y + half for half =
    // lanes / 2, ..., 1: the additions of the shared-memory halving below, in its order, hence
    // its bits. That halving takes kColumnSumThreads / lanes = 32 columns a round, each round an
    // L2 read, three barriers and a read-modify-write of dst, one after another: 24 rounds for a
    // LayerNorm backward's 3 x 256 columns, the serial tail of the whole launch.
    for (int64_t c = c0 + tid; c < c1; c += threads) {
      float chain[kRegisterChains];
#pragma unroll
      for (int y = 0; y < kRegisterChains; ++y) {
        chain[y] = y < lanes && y < t.count ? __ldcg(t.partial + y * t.width + c) : 0.0f;
      }
      add(c, halve_chains(chain, lanes));
    }
    return;
  }
  // Narrow sums (more than kRegisterChains chains, at most 16 columns): the halving, `cols`
  // columns at a time in the former launch's layout: scratch[lane * cols + x] holds chain `lane`
  // of column base + x (0.0f for a chain without rows).
  const int cols = kColumnSumThreads / lanes;
  for (int64_t base = c0; base < c1; base += cols) {
    for (int i = tid; i < kColumnSumThreads; i += threads) {
      const int lane = i / cols;
      const int64_t c = base + i % cols;
      scratch[i] = lane < t.count && c < c1 ? __ldcg(t.partial + lane * t.width + c) : 0.0f;
    }
    for (int half = lanes / 2; half > 0; half /= 2) {
      __syncthreads();
      for (int i = tid; i < half * cols; i += threads) scratch[i] += scratch[i + half * cols];
    }
    __syncthreads();
    if (tid < cols && base + tid < c1) add(base + tid, scratch[tid]);
    __syncthreads();  // scratch is refilled for the next columns
  }
}

}  // namespace electra::cuda
