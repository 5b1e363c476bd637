// layernorm kernels.
// Forward (and the fused residual forward): L lanes per row (lanes_per_row: a warp, or 8 or 16
// lanes for H <= 64 or 128), 8 warps per 256-thread block; a lane owns columns
// lane * V + L * V * k (V = 8 with 16-byte accesses when H % 8 == 0 and every pointer is aligned,
// else 1). Three passes over the row: sum, sum of squared deviations (two-pass
// variance, robust for large means), normalise; passes 2 and 3 re-read the row from L1/L2, so HBM
// sees each element read once and written once. The fused variant forms
// sum = dropout(x) + residual in pass 1, stores it rounded to T, and normalises the stored value.
// Backward, one launch: a block owns R = layernorm_rows_per_block(N) rows (at most 512 row
// blocks, kernels/param_grad_rows.h); its groups of L lanes compute dx one row per group (two
// passes: the row sums of g and g * xhat, then dx) and add dy * xhat and dy into per-group sums
// in shared memory, which the block adds in group order into its partial row of dgamma / dbeta in
// the workspace; the
// blocks that arrive last add the partial rows in a fixed order (kernels/column_sum.cuh).
// Deterministic, no float atomics; dy and x are read once from HBM (the second pass over a row
// hits L1/L2). With layernorm_backward's dy_dropout, dy is dropped as it is read (the Philox
// words generated in both passes: nothing stored), so the dropout's backward needs no launch.
#include "kernels/column_sum.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/dropout_keep.cuh"
#include "kernels/layernorm.h"

namespace electra::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // warps per block in the row kernels

// Rounds v to T and back, so that statistics describe the stored value.
template <class T>
__device__ __forceinline__ float round_to(float v) {
  return to_float(from_float<T>(v));
}

// Lanes that share a row: a narrow row (H <= 8 L with 16-byte accesses) takes L = 8 or 16 lanes,
// so a warp holds 32 / L rows at once; with one row a warp, the generator's H = 64 left 24 of 32
// lanes idle (its residual LayerNorm backward moved 205 GB/s on the 2026-11-27 H100 profile).
// The row sums are the same bits at any L: a lane past the row's columns held 0, and the tree
// over 32 lanes added those zeros (exactly) before the tree over the first L.
inline int lanes_per_row(int64_t h, int v) {
  if (v == 8 && h <= 8 * 8) return 8;
  if (v == 8 && h <= 8 * 16) return 16;
  return kWarpSize;
}

// The sum over the L lanes of this lane's row (L a power of two dividing 32); every lane gets it.
template <int L>
__device__ __forceinline__ float row_sum(float x) {
  for (int offset = L / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

template <class T, int V, int L, bool kResidual>
__global__ void layernorm_forward_kernel(const T* x, const T* residual, T* sum, const float* gamma,
                                         const float* beta, float eps, T* y, float* mean,
                                         float* rstd, int64_t n, int64_t h, DropoutSite site,
                                         float scale) {
  site.stream = site.stream.resolved();  // the step may live in device memory (engine/philox.h)
  const int64_t row =
      blockIdx.x * static_cast<int64_t>(kRowsPerBlock * (kWarpSize / L)) + threadIdx.x / L;
  // A lane of a row past N takes part in the row sums' shuffles with no columns.
  const int lane = threadIdx.x % L;
  const int64_t first = row < n ? lane * V : h;
  const T* src = x + row * h;
  float v[V], acc = 0;
  if constexpr (kResidual) {
    T* dst = sum + row * h;
    float r[V];
    bool keep[V];
    for (int64_t c = first; c < h; c += L * V) {
      load_vec<V>(src + c, v);
      load_vec<V>(residual + row * h + c, r);
      keep_mask<V>(site, row * h + c, keep);
      for (int j = 0; j < V; ++j) {
        v[j] = round_to<T>((keep[j] ? mul_rn(v[j], scale) : 0.0f) + r[j]);  // no FMA: as the CPU
        acc += v[j];
      }
      store_vec<V>(dst + c, v);
    }
    src = dst;
  } else {
    for (int64_t c = first; c < h; c += L * V) {
      load_vec<V>(src + c, v);
      for (int j = 0; j < V; ++j) acc += v[j];
    }
  }
  const float mu = row_sum<L>(acc) / static_cast<float>(h);
  float sq = 0;
  for (int64_t c = first; c < h; c += L * V) {
    load_vec<V>(src + c, v);
    for (int j = 0; j < V; ++j) sq += (v[j] - mu) * (v[j] - mu);
  }
  const float rs = 1.0f / sqrtf(row_sum<L>(sq) / static_cast<float>(h) + eps);
  float g[V], b[V];
  for (int64_t c = first; c < h; c += L * V) {
    load_vec<V>(src + c, v);
    load_vec<V>(gamma + c, g);
    load_vec<V>(beta + c, b);
    for (int j = 0; j < V; ++j) v[j] = (v[j] - mu) * rs * g[j] + b[j];
    store_vec<V>(y + row * h + c, v);
  }
  if (lane == 0 && row < n) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// Warps per backward block: each group of `lanes` lanes keeps its running sums of dy * xhat and dy
// (and dx when the bias gradient is asked for: `parts` H floats) in dynamic shared memory, which
// together with finish_column_tile's scratch must fit the 48 KB a kernel gets without opting in
// (46 KB for the sums: with 2 parts 8 warps up to H = 736, 5 at H = 1024; with 3 parts 8 up to
// H = 490, 3 at H = 1024; 8 at H = 64 with 4 groups a warp).
constexpr int64_t kBackwardSumBytes = 46 * 1024;
int backward_warps(int64_t h, int parts, int lanes) {
  const int64_t group_bytes = parts * h * int64_t{sizeof(float)};
  return static_cast<int>(
      std::min<int64_t>(kRowsPerBlock, kBackwardSumBytes / (group_bytes * (kWarpSize / lanes))));
}

// acc[0, V) += v[0, V) in shared memory (16-byte accesses when V % 4 == 0: conflict-free).
template <int V>
__device__ __forceinline__ void add_to_shared(float* acc, const float* v) {
  if constexpr (V % 4 == 0) {
    for (int q = 0; q < V / 4; ++q) {
      float4 a = reinterpret_cast<float4*>(acc)[q];
      a.x += v[4 * q];
      a.y += v[4 * q + 1];
      a.z += v[4 * q + 2];
      a.w += v[4 * q + 3];
      reinterpret_cast<float4*>(acc)[q] = a;
    }
  } else {
    for (int j = 0; j < V; ++j) acc[j] += v[j];
  }
}

// The whole backward in one launch. Block p owns rows [p R, (p + 1) R); group g of G (L lanes,
// lanes_per_row: one warp, or a quarter or half of one for narrow rows) takes rows p R + g,
// p R + g + G, ... and computes each row's dx with its L lanes (or, fused,
// dresidual = d and dx = d * keep * scale; or, with kDropDy, from dy * keep * scale, the mask
// regenerated in both passes over the row), adding dy * xhat and dy (and, with dbias, dx in f32)
// into its own sums in shared memory (a lane owns the columns it loads: no synchronisation). The
// G groups' sums are then added in group order into partial row p = [dgamma | dbeta | dbias parts]
// (2 or 3 H floats), and the blocks that arrive last add the partial rows into dgamma, dbeta and
// dbias (kernels/column_sum.cuh).
template <class T, int V, int L, bool kResidual, bool kDropDy>
__global__ void layernorm_backward_kernel(const T* dy, const T* x, const float* gamma,
                                          const float* mean, const float* rstd, T* dx, T* dresidual,
                                          int64_t n, int64_t h, int64_t rows, DropoutSite site,
                                          float scale, ColumnTickets tickets, float* dgamma,
                                          float* dbeta, float* dbias) {
  extern __shared__ float4 shared_sums[];  // [G][parts H]: group g's sums of dy * xhat, dy, dx
  site.stream = site.stream.resolved();    // the step may live in device memory (engine/philox.h)
  // Groups of L lanes, one row each at a time: G = blockDim.x / L of them, group g taking rows
  // p R + g, p R + g + G, ...
  const int groups = blockDim.x / L, group = threadIdx.x / L;
  const int lane = threadIdx.x % L;
  float* const sums = reinterpret_cast<float*>(shared_sums);
  const int64_t width = tickets.width;  // parts H
  float* const mine = sums + group * width;
  for (int64_t c = lane * V; c < h; c += L * V) {
    for (int64_t part = 0; part < width; part += h) {
      for (int j = 0; j < V; ++j) mine[part + c + j] = 0.0f;
    }
  }
  const int64_t end = std::min<int64_t>(n, (blockIdx.x + 1) * rows);
  // Every group of a warp runs as many row iterations as the warp's first (a group past `end`
  // with no columns), so that the row sums' shuffles have all 32 lanes.
  const int64_t first_row = blockIdx.x * rows + group - group % (kWarpSize / L);
  for (int64_t base = first_row; base < end; base += groups) {
    const int64_t row = base + group % (kWarpSize / L);
    const int64_t first = row < end ? lane * V : h;
    const float mu = row < end ? mean[row] : 0.0f, rs = row < end ? rstd[row] : 0.0f;
    float d[V], v[V], g[V], dg[V], sum_g = 0, sum_gx = 0;
    bool keep[V];
    // dy of the row at columns c .. c + V - 1 (dropped with kDropDy: dropout(dy), in f32).
    auto load_dy = [&](int64_t c) {
      load_vec<V>(dy + row * h + c, d);
      if constexpr (kDropDy) {
        keep_mask<V>(site, row * h + c, keep);
        for (int j = 0; j < V; ++j) d[j] = keep[j] ? d[j] * scale : 0.0f;
      }
    };
    for (int64_t c = first; c < h; c += L * V) {
      load_dy(c);
      load_vec<V>(x + row * h + c, v);
      load_vec<V>(gamma + c, g);
      for (int j = 0; j < V; ++j) {
        sum_g += d[j] * g[j];
        sum_gx += d[j] * g[j] * (v[j] - mu) * rs;
      }
    }
    const float mean_g = row_sum<L>(sum_g) / static_cast<float>(h);
    const float mean_gx = row_sum<L>(sum_gx) / static_cast<float>(h);
    for (int64_t c = first; c < h; c += L * V) {
      load_dy(c);
      load_vec<V>(x + row * h + c, v);
      load_vec<V>(gamma + c, g);
      for (int j = 0; j < V; ++j) dg[j] = d[j] * (v[j] - mu) * rs;
      add_to_shared<V>(mine + c, dg);
      add_to_shared<V>(mine + h + c, d);
      for (int j = 0; j < V; ++j) d[j] = rs * (d[j] * g[j] - mean_g - (v[j] - mu) * rs * mean_gx);
      if constexpr (kResidual) {
        store_vec<V>(dresidual + row * h + c, d);
        keep_mask<V>(site, row * h + c, keep);
        for (int j = 0; j < V; ++j) d[j] = keep[j] ? d[j] * scale : 0.0f;
        if (dbias != nullptr) add_to_shared<V>(mine + 2 * h + c, d);
      }
      store_vec<V>(dx + row * h + c, d);
    }
  }
  __syncthreads();
  float* const partial = tickets.partial + blockIdx.x * width;
  for (int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    float total = sums[c];
    for (int g = 1; g < groups; ++g) total += sums[g * width + c];
    partial[c] = total;
  }
  finish_column_tile(tickets, blockIdx.x, 0, 0, width, [&](int64_t c, float total) {
    if (c < h) {
      dgamma[c] += total;
    } else if (c < 2 * h) {
      dbeta[c - h] += total;
    } else {
      dbias[c - 2 * h] += total;
    }
  });
}

// Checks that `same` share the activation dtype and `f32` are f32, then dispatches on it.
template <class F>
void dispatch_checked(const char* op, const Tensor& act, std::initializer_list<const Tensor*> same,
                      std::initializer_list<const Tensor*> f32, F&& f) {
  for (const Tensor* t : same) {
    ELECTRA_CHECK(t->dtype == act.dtype, op, " (cuda): activation ", t->str(), " differs from ",
                  act.str());
  }
  for (const Tensor* t : f32) check_dtype(*t, DType::F32, op);
  dispatch_activation(act, op, std::forward<F>(f));
}

template <class T, bool kResidual>
void forward(Context& ctx, const Tensor& x, const Tensor* residual, const Tensor* sum,
             const DropoutSite& site, const Tensor& gamma, const Tensor& beta, float eps,
             const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  const int64_t n = x.dim(0), h = x.dim(1);
  if (n == 0 || h == 0) return;
  const T* in = static_cast<const T*>(x.data);
  const T* res = residual ? static_cast<const T*>(residual->data) : nullptr;
  T* s = sum ? static_cast<T*>(sum->data) : nullptr;
  T* out = static_cast<T*>(y.data);
  const float scale = 1.0f / (1.0f - site.p);
  const int threads = kRowsPerBlock * kWarpSize;
  const int v = vectorizable(h, {in, res, s, out, gamma.data, beta.data}) ? 8 : 1;
  const int lanes = lanes_per_row(h, v);
  const unsigned blocks =
      static_cast<unsigned>(ceil_div(n, int64_t{kRowsPerBlock} * (kWarpSize / lanes)));
  auto launch = [&](auto kernel) {
    kernel<<<blocks, threads, 0, ctx.stream()>>>(in, res, s, gamma.ptr<float>(), beta.ptr<float>(),
                                                 eps, out, mean.ptr<float>(), rstd.ptr<float>(), n,
                                                 h, site, scale);
  };
  if (v == 1) {
    launch(layernorm_forward_kernel<T, 1, kWarpSize, kResidual>);
  } else if (lanes == 8) {
    launch(layernorm_forward_kernel<T, 8, 8, kResidual>);
  } else if (lanes == 16) {
    launch(layernorm_forward_kernel<T, 8, 16, kResidual>);
  } else {
    launch(layernorm_forward_kernel<T, 8, kWarpSize, kResidual>);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class T, bool kResidual, bool kDropDy = false>
void backward(Context& ctx, const Tensor& dy, const Tensor& x, const Tensor& gamma,
              const Tensor& mean, const Tensor& rstd, const DropoutSite& site, const Tensor& dx,
              const Tensor* dresidual, const Tensor& dgamma, const Tensor& dbeta,
              const Tensor* dbias, const Tensor& workspace, const char* op) {
  const int64_t n = x.dim(0), h = x.dim(1);
  if (n == 0 || h == 0) return;
  ELECTRA_CHECK(workspace.device == Device::CUDA && workspace.dtype == DType::F32 &&
                    workspace.numel() >= layernorm_backward_workspace_floats(n, h),
                op, ": workspace ", workspace.str(), " must be f32 on cuda with at least ",
                layernorm_backward_workspace_floats(n, h), " elements");
  const T* d = static_cast<const T*>(dy.data);
  const T* in = static_cast<const T*>(x.data);
  T* out = static_cast<T*>(dx.data);
  T* dres = dresidual ? static_cast<T*>(dresidual->data) : nullptr;
  const int parts = dbias != nullptr ? 3 : 2;
  const int v = vectorizable(h, {d, in, out, dres, gamma.data}) ? 8 : 1;
  const int lanes = lanes_per_row(h, v);
  const int warps = backward_warps(h, parts, lanes);
  ELECTRA_CHECK(warps >= 1, op, " (cuda): H = ", h, " exceeds the ",
                kBackwardSumBytes / (parts * sizeof(float)),
                " columns whose parameter-gradient sums fit in shared memory");
  const float scale = 1.0f / (1.0f - site.p);
  const int64_t rows = layernorm_rows_per_block(n);
  const unsigned blocks = static_cast<unsigned>(ceil_div(n, rows));
  const int groups = warps * (kWarpSize / lanes);
  const size_t shared = static_cast<size_t>(groups) * parts * h * sizeof(float);
  float* bias_grad = dbias != nullptr ? dbias->ptr<float>() : nullptr;
  // Column sums over H, as the former second launch added dgamma and dbeta (parts H columns, 1
  // tile).
  const ColumnTickets tickets =
      column_tickets(ctx, workspace.ptr<float>(), blocks, parts * h, h, 1);
  auto launch = [&](auto kernel) {
    kernel<<<blocks, warps * kWarpSize, shared, ctx.stream()>>>(
        d, in, gamma.ptr<float>(), mean.ptr<float>(), rstd.ptr<float>(), out, dres, n, h, rows,
        site, scale, tickets, dgamma.ptr<float>(), dbeta.ptr<float>(), bias_grad);
  };
  if (v == 1) {
    launch(layernorm_backward_kernel<T, 1, kWarpSize, kResidual, kDropDy>);
  } else if (lanes == 8) {
    launch(layernorm_backward_kernel<T, 8, 8, kResidual, kDropDy>);
  } else if (lanes == 16) {
    launch(layernorm_backward_kernel<T, 8, 16, kResidual, kDropDy>);
  } else {
    launch(layernorm_backward_kernel<T, 8, kWarpSize, kResidual, kDropDy>);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void LayerNormForward::cuda(Context& ctx) const {
  cuda::dispatch_checked(kName, x, {&y}, {&gamma, &beta, &mean, &rstd}, [&](auto tag) {
    cuda::forward<decltype(tag), false>(ctx, x, nullptr, nullptr, DropoutSite{}, gamma, beta, eps,
                                        y, mean, rstd);
  });
}

void LayerNormBackward::cuda(Context& ctx) const {
  cuda::dispatch_checked(
      kName, x, {&dy, &dx}, {&gamma, &mean, &rstd, &dgamma, &dbeta}, [&](auto tag) {
        using T = decltype(tag);
        if (dy_dropout.p > 0) {
          cuda::backward<T, false, true>(ctx, dy, x, gamma, mean, rstd, dy_dropout, dx, nullptr,
                                         dgamma, dbeta, nullptr, workspace, kName);
        } else {
          cuda::backward<T, false>(ctx, dy, x, gamma, mean, rstd, DropoutSite{}, dx, nullptr,
                                   dgamma, dbeta, nullptr, workspace, kName);
        }
      });
}

void ResidualLayerNormForward::cuda(Context& ctx) const {
  cuda::dispatch_checked(kName, x, {&residual, &sum, &y}, {&gamma, &beta, &mean, &rstd},
                         [&](auto tag) {
                           cuda::forward<decltype(tag), true>(ctx, x, &residual, &sum, site, gamma,
                                                              beta, eps, y, mean, rstd);
                         });
}

void ResidualLayerNormBackward::cuda(Context& ctx) const {
  if (dbias.data != nullptr) check_dtype(dbias, DType::F32, kName);
  cuda::dispatch_checked(
      kName, sum, {&dy, &dx, &dresidual}, {&gamma, &mean, &rstd, &dgamma, &dbeta}, [&](auto tag) {
        cuda::backward<decltype(tag), true>(ctx, dy, sum, gamma, mean, rstd, site, dx, &dresidual,
                                            dgamma, dbeta, dbias.data != nullptr ? &dbias : nullptr,
                                            workspace, kName);
      });
}

}  // namespace electra
