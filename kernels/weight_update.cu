// optimizer kernels. Every elementwise kernel runs one block per chunk of the segment table (at
// most kOptimChunk elements of one segment, kThreads threads, coalesced loads: scalar ones, but
// AdamW's 16 bytes wide over the chunk's aligned body, segments starting at arbitrary offsets).
// Reductions are two-pass and deterministic:
//   per-chunk partials (f32, fixed block tree) -> one block of W warps, warp w owning segments
//   w, w + W, ...: lanes add the segment's partials in f64 with a fixed stride, a fixed butterfly
//   combines the lanes, and warp totals are added in warp order by thread 0. grad_norm's second
//   pass is the last block of its first (W = 8: kernels/column_sum.cuh's last_arrival), LAMB's
//   trust ratios a launch of their own (W = 32).
// Hyper-parameters and the global norm are read from device memory by every thread (cached
// broadcasts), so the launches never wait for the host; a non-finite norm (overflow under loss
// scaling) makes every update kernel return before touching parameters or moments. AdamW is one
// kernel (28 bytes moved per parameter); LAMB is three: moments + norms, trust ratios, apply (24 +
// 16 = 40 bytes per parameter).
#include "engine/ticket_counters.h"
#include "kernels/column_sum.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/weight_update.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kReduceThreads = 1024;

__device__ __forceinline__ double warp_sum_f64(double x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  }
  return x;
}

// What one block works on: elements [begin, end) of the flat buffer, in segment `segment`.
struct Chunk {
  int segment;
  int64_t begin, end;
  bool decay;
};

__device__ __forceinline__ Chunk chunk_of_block(const int32_t* segments, const int32_t* blocks) {
  const int32_t segment = blocks[2 * blockIdx.x], start = blocks[2 * blockIdx.x + 1];
  const int32_t* f = segments + segment * kSegFields;
  const int64_t offset = f[kSegOffset], end = int64_t{start} + kOptimChunk;
  return {segment, offset + start, offset + (end < f[kSegSize] ? end : f[kSegSize]),
          f[kSegDecay] != 0};
}

// Segments a warp of reduce_segments has in flight: their table fields, then their first
// partials, are loaded for all of them before the sums. One segment at a time cost two dependent
// L2 round trips a segment, walked serially by the one block that finishes the launch (ELECTRA-
// Small has hundreds of segments: 8 warps, dozens of round trips each).
constexpr int kSegmentsInFlight = 4;

// Writes sum_{b in blocks of segment s} partials[b] (f64) to out(s, value) for every segment and
// returns the total over the segments (valid in thread 0). One block of Threads. The partials are
// read from L2 (__ldcg): other blocks of the same launch may have written them. Warp w takes
// segments w, w + W, w + 2 W, ... in that order, kSegmentsInFlight at a time; a segment's lanes
// add its partials lane, lane + 32, ... from 0.0, then a fixed butterfly: the order depends on the
// table only.
template <int Threads, class Out>
__device__ double reduce_segments(const int32_t* segments, int num_segments, const float* partials,
                                  Out out) {
  __shared__ double warp_totals[Threads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  constexpr int kWarps = Threads / kWarpSize;
  // A 1024-thread block (LAMB's ratios: 32 warps, fewer segments each) has 32 registers a thread.
  constexpr int kU = Threads >= 1024 ? 2 : kSegmentsInFlight;
  double warp_total = 0.0;
  for (int s0 = warp; s0 < num_segments; s0 += kWarps * kU) {
    int first[kU], count[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int s = s0 + u * kWarps;
      first[u] = s < num_segments ? segments[s * kSegFields + kSegFirstBlock] : 0;
      count[u] = s < num_segments ? segments[s * kSegFields + kSegBlockCount] : 0;
    }
    float head[kU];  // each segment's partial `lane` (most segments have at most 32)
#pragma unroll
    for (int u = 0; u < kU; ++u) head[u] = lane < count[u] ? __ldcg(partials + first[u] + lane) : 0;
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int s = s0 + u * kWarps;
      if (s >= num_segments) break;  // the same in every lane
      double sum = 0.0;
      if (lane < count[u]) sum += head[u];
      for (int b = lane + kWarpSize; b < count[u]; b += kWarpSize) {
        sum += __ldcg(partials + first[u] + b);
      }
      sum = warp_sum_f64(sum);
      if (lane == 0) out(s, sum);
      warp_total += sum;
    }
  }
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kWarps; ++w) total += warp_totals[w];
  }
  return total;
}

// The schedule grad_norm advances (lr_table == nullptr: none) and where it records the norm
// (acc == nullptr: nowhere).
struct Schedule {
  const float* lr_table;
  int64_t entries;
  int32_t* counter;
  float* hyper;
};
struct Record {
  double* acc;
  int row, non_finite;
};

// Block b < num_blocks sums its chunk's squares into partials[b]; the last block to finish (of
// max(num_blocks, 1): without blocks one block writes the norm 0) adds them per segment, records
// the norm and advances the schedule.
__global__ void __launch_bounds__(kThreads)
    grad_norm_kernel(const float* x, const int32_t* segments, int num_segments,
                     const int32_t* blocks, int64_t num_blocks, float* partials, uint32_t* ticket,
                     float* norm, float* segment_norms, Schedule schedule, Record record) {
  __shared__ float scratch[kWarpSize];
  if (blockIdx.x < num_blocks) {
    const Chunk c = chunk_of_block(segments, blocks);
    float sum = 0.0f;
    for (int64_t i = c.begin + threadIdx.x; i < c.end; i += kThreads) sum += x[i] * x[i];
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) partials[blockIdx.x] = sum;
  }
  if (!last_arrival(ticket, gridDim.x)) return;
  const double total =
      reduce_segments<kThreads>(segments, num_segments, partials, [&](int s, double sum) {
        if (segment_norms != nullptr) segment_norms[s] = static_cast<float>(sqrt(sum));
      });
  if (threadIdx.x != 0) return;
  const float n = static_cast<float>(sqrt(total));
  norm[0] = n;
  if (record.acc != nullptr) record_norm(record.acc, record.row, record.non_finite, n);
  if (schedule.lr_table != nullptr) {
    advance_schedule(schedule.lr_table, schedule.entries, schedule.counter, schedule.hyper);
  }
}

// One AdamW element, p - step * adam_update(c, p, g, m, v, decay), advancing m and v, with its
// roundings spelled out: nvcc contracts a multiply and an add into one FMA, and which product of
// v = b2 v + (1 - b2) gc gc it fuses depends on the code around the expression (the 16-byte path
// first got fma(gc, (1 - b2) gc, b2 v), the scalar loop fma(b2, v, gc (1 - b2) gc)). These are the
// operations nvcc 13 made of adam_update in the scalar kernel this one replaced (its PTX; the step
// p - step * update a multiply and a subtract there, which ptxas fused into one FFMA on sm_80 and
// sm_90), so the update keeps its bits on both paths. adam_update (kernels/weight_update.h) stays
// the definition: a change there must be made here too. sqrt and division round correctly (nvcc's
// defaults, -prec-sqrt=true -prec-div=true), as sqrtf and / do.
__device__ __forceinline__ float adamw_element(const AdamCoeffs& c, float step, bool decay, float p,
                                               float g, float& m, float& v) {
  const float gc = __fmul_rn(c.clip, g);
  m = __fmaf_rn(c.beta1, m, __fmul_rn(1.0f - c.beta1, gc));
  v = __fmaf_rn(c.beta2, v, __fmul_rn(__fmul_rn(1.0f - c.beta2, gc), gc));
  float update =
      __fdiv_rn(__fmul_rn(m, c.m_scale), __fadd_rn(__fsqrt_rn(__fmul_rn(v, c.v_scale)), c.eps));
  if (decay) update = __fmaf_rn(c.weight_decay, p, update);
  return __fmaf_rn(-step, update, p);
}

// 16-byte vectors of each buffer a thread loads before it computes and stores the first of them:
// the stores may alias the next vectors' loads as far as the compiler knows, so each group costs
// one memory latency (the scalar kernel: two per element, p's load sunk below the division).
// 2: 8 loads of 16 bytes in flight a thread, 62-63 registers (4 blocks an SM); 1: 46, 4: 104.
constexpr int kAdamVectorsInFlight = 2;

// AdamW over one chunk. vector (the four flat buffers 16-byte aligned): the chunk's aligned body
// (vector_body) in 16-byte vectors, thread t taking vectors t, t + kThreads, ... in groups of
// kAdamVectorsInFlight, its head and tail (< 4 elements each) in scalars; otherwise the whole
// chunk in scalars, thread t taking elements begin + t, begin + t + kThreads, .... Every element
// gets adamw_element whatever its path.
__global__ void __launch_bounds__(kThreads)
    adamw_kernel(float* __restrict__ params, const float* __restrict__ grads, float* __restrict__ m,
                 float* __restrict__ v, const int32_t* segments, const float* lr_mult,
                 const int32_t* blocks, const float* hyper, const float* norm, bool bias_correction,
                 bool vector) {
  const Chunk c = chunk_of_block(segments, blocks);
  // Read beside the segment's fields, not after the norm's test: one latency fewer before the data.
  const float mult = lr_mult[c.segment];
  const AdamCoeffs k = adam_coeffs(hyper, norm[0], bias_correction);
  if (k.skip || mult == 0.0f) return;  // a skipped update or a frozen segment
  const float step = k.lr * mult;
  const VectorBody body = vector ? vector_body(c.begin, c.end) : VectorBody{c.end, c.end};
  auto scalar = [&](int64_t i) {
    float mi = m[i], vi = v[i];
    params[i] = adamw_element(k, step, c.decay, params[i], grads[i], mi, vi);
    m[i] = mi;
    v[i] = vi;
  };
#pragma unroll 1
  for (int64_t i = c.begin + threadIdx.x; i < body.begin; i += kThreads) scalar(i);
#pragma unroll 1
  for (int64_t i = body.end + threadIdx.x; i < c.end; i += kThreads) scalar(i);

  float4* p4 = reinterpret_cast<float4*>(params + body.begin);
  const float4* g4 = reinterpret_cast<const float4*>(grads + body.begin);
  float4* m4 = reinterpret_cast<float4*>(m + body.begin);
  float4* v4 = reinterpret_cast<float4*>(v + body.begin);
  const int vectors = static_cast<int>((body.end - body.begin) / 4);  // <= kOptimChunk / 4
  for (int first = threadIdx.x; first < vectors; first += kAdamVectorsInFlight * kThreads) {
    float4 p[kAdamVectorsInFlight], g[kAdamVectorsInFlight], mv[kAdamVectorsInFlight],
        vv[kAdamVectorsInFlight];
#pragma unroll
    for (int u = 0; u < kAdamVectorsInFlight; ++u) {
      const int j = first + u * kThreads;
      if (j < vectors) {
        p[u] = p4[j];
        g[u] = g4[j];
        mv[u] = m4[j];
        vv[u] = v4[j];
      }
    }
#pragma unroll
    for (int u = 0; u < kAdamVectorsInFlight; ++u) {
      const int j = first + u * kThreads;
      if (j < vectors) {
        p[u].x = adamw_element(k, step, c.decay, p[u].x, g[u].x, mv[u].x, vv[u].x);
        p[u].y = adamw_element(k, step, c.decay, p[u].y, g[u].y, mv[u].y, vv[u].y);
        p[u].z = adamw_element(k, step, c.decay, p[u].z, g[u].z, mv[u].z, vv[u].z);
        p[u].w = adamw_element(k, step, c.decay, p[u].w, g[u].w, mv[u].w, vv[u].w);
        m4[j] = mv[u];
        v4[j] = vv[u];
        p4[j] = p[u];
      }
    }
  }
}

// LAMB pass 1: advances the moments and writes per-chunk sums of p^2 and update^2.
__global__ void __launch_bounds__(kThreads)
    lamb_moments_kernel(const float* params, const float* grads, float* m, float* v,
                        const int32_t* segments, const float* lr_mult, const int32_t* blocks,
                        const float* hyper, const float* norm, bool bias_correction,
                        float* p_partials, float* u_partials) {
  __shared__ float scratch[kWarpSize];
  const Chunk c = chunk_of_block(segments, blocks);
  const AdamCoeffs k = adam_coeffs(hyper, norm[0], bias_correction);
  // A skipped step or a frozen segment writes zero partials (the ratios are then 1 and never
  // used) and leaves the moments alone.
  const int64_t end = k.skip || lr_mult[c.segment] == 0.0f ? c.begin : c.end;
  float p_sq = 0.0f, u_sq = 0.0f;
  for (int64_t i = c.begin + threadIdx.x; i < end; i += kThreads) {
    float mi = m[i], vi = v[i];
    const float p = params[i];
    const float update = adam_update(k, p, grads[i], mi, vi, c.decay);
    m[i] = mi;
    v[i] = vi;
    p_sq += p * p;
    u_sq += update * update;
  }
  p_sq = block_sum(p_sq, scratch);
  u_sq = block_sum(u_sq, scratch);
  if (threadIdx.x == 0) {
    p_partials[blockIdx.x] = p_sq;
    u_partials[blockIdx.x] = u_sq;
  }
}

// LAMB pass 2: ratio[s] = ||p_s|| / ||update_s||, 1 when either is 0. One block.
__global__ void __launch_bounds__(kReduceThreads)
    lamb_ratio_kernel(const int32_t* segments, int num_segments, const float* p_partials,
                      const float* u_partials, float* ratios) {
  // Two reductions: the first stores ||p_s||^2 in ratios, the second divides.
  reduce_segments<kReduceThreads>(segments, num_segments, p_partials,
                                  [&](int s, double sum) { ratios[s] = static_cast<float>(sum); });
  __syncthreads();
  reduce_segments<kReduceThreads>(segments, num_segments, u_partials, [&](int s, double u_sq) {
    const double p_sq = ratios[s];
    ratios[s] = p_sq > 0.0 && u_sq > 0.0 ? static_cast<float>(sqrt(p_sq / u_sq)) : 1.0f;
  });
}

// LAMB pass 3: p -= lr * lr_mult * ratio * update, the update recomputed from the new moments.
__global__ void __launch_bounds__(kThreads)
    lamb_apply_kernel(float* params, const float* m, const float* v, const int32_t* segments,
                      const float* lr_mult, const int32_t* blocks, const float* hyper,
                      const float* norm, bool bias_correction, const float* ratios) {
  const Chunk c = chunk_of_block(segments, blocks);
  const AdamCoeffs k = adam_coeffs(hyper, norm[0], bias_correction);
  if (k.skip || lr_mult[c.segment] == 0.0f) return;
  const float step = k.lr * lr_mult[c.segment] * ratios[c.segment];
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += kThreads) {
    const float p = params[i];
    params[i] = p - step * adam_direction(k, p, m[i], v[i], c.decay);
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void GradNorm::cuda(Context& ctx) const {
  const bool advance = schedule.lr_table.data != nullptr;
  const cuda::Schedule s{advance ? schedule.lr_table.ptr<float>() : nullptr,
                         schedule.lr_table.numel(),
                         advance ? schedule.counter.ptr<int32_t>() : nullptr,
                         advance ? schedule.hyper.ptr<float>() : nullptr};
  const cuda::Record r{record.acc.data != nullptr ? record.acc.ptr<double>() : nullptr, record.row,
                       record.non_finite};
  // The context's first ticket counter (engine/ticket_counters.h), zero again after the launch.
  cuda::
      grad_norm_kernel<<<std::max<int64_t>(table.num_blocks, 1), cuda::kThreads, 0, ctx.stream()>>>(
          grads.ptr<float>(), table.segments.ptr<int32_t>(), static_cast<int>(table.num_segments),
          table.blocks.ptr<int32_t>(), table.num_blocks, workspace.ptr<float>(),
          ticket_counters(ctx), norm.ptr<float>(),
          segment_norms.data != nullptr ? segment_norms.ptr<float>() : nullptr, s, r);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

// AdamW: one element-wise kernel, 16-byte vectors where the four buffers allow them (arena
// allocations always do; a view off a 16-byte boundary takes the scalar path). LAMB: moments and
// the per-block sums of p^2 and update^2, the per-segment trust ratios in one block, then the
// update from the new moments.
void AdamStep::cuda(Context& ctx) const {
  if (table.num_blocks == 0) return;
  if (!lamb) {
    cuda::adamw_kernel<<<table.num_blocks, cuda::kThreads, 0, ctx.stream()>>>(
        params.ptr<float>(), grads.ptr<float>(), m.ptr<float>(), v.ptr<float>(),
        table.segments.ptr<int32_t>(), table.lr_mult.ptr<float>(), table.blocks.ptr<int32_t>(),
        hyper.ptr<float>(), norm.ptr<float>(), bias_correction,
        cuda::is_aligned16(params.data) && cuda::is_aligned16(grads.data) &&
            cuda::is_aligned16(m.data) && cuda::is_aligned16(v.data));
    ELECTRA_CUDA_CHECK_LAUNCH();
    return;
  }
  float* p_partials = workspace.ptr<float>();
  float* u_partials = p_partials + table.num_blocks;
  float* ratios = u_partials + table.num_blocks;
  const int32_t* segments = table.segments.ptr<int32_t>();
  const int32_t* blocks = table.blocks.ptr<int32_t>();
  cuda::lamb_moments_kernel<<<table.num_blocks, cuda::kThreads, 0, ctx.stream()>>>(
      params.ptr<float>(), grads.ptr<float>(), m.ptr<float>(), v.ptr<float>(), segments,
      table.lr_mult.ptr<float>(), blocks, hyper.ptr<float>(), norm.ptr<float>(), bias_correction,
      p_partials, u_partials);
  ELECTRA_CUDA_CHECK_LAUNCH();
  cuda::lamb_ratio_kernel<<<1, cuda::kReduceThreads, 0, ctx.stream()>>>(
      segments, static_cast<int>(table.num_segments), p_partials, u_partials, ratios);
  ELECTRA_CUDA_CHECK_LAUNCH();
  cuda::lamb_apply_kernel<<<table.num_blocks, cuda::kThreads, 0, ctx.stream()>>>(
      params.ptr<float>(), m.ptr<float>(), v.ptr<float>(), segments, table.lr_mult.ptr<float>(),
      blocks, hyper.ptr<float>(), norm.ptr<float>(), bias_correction, ratios);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
