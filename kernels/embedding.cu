// embedding kernels.
// Forward, one launch: blocks [0, tiles) sort the backward's keys (kernels/embedding_sort.cuh; only
// with a workspace), the others hold one token per warp (blockDim.x / 32 tokens a block: the sort's
// 1024 threads for ELECTRA's 16384 tokens, 256 without a sort), lanes over columns in groups of V
// (V = 8 with 16-byte accesses when E % 8 == 0 and the pointers are aligned, else 1). Three passes
// over the row, as layernorm_forward makes them: the three table rows added in f32 in the order
// word + position + segment, stored rounded to T (the sum saved for the backward) and summed as
// stored; the squared deviations of the stored row read back (L1); y = dropout((v - mean) rstd
// gamma + beta), rounded once. The sort block runs beside the row blocks on one SM.
// Backward, deterministic and without float atomics, one launch per sort tile of
// kEmbeddingSortTileKeys tokens (accumulate_kernel), on the keys the forward sorted:
//   Blocks [0, word_blocks): one warp per (segment of kRunSegment sorted keys, chunk of 32 * V
//   columns, V = 4 with 16-byte f32 accesses): two ballots over the segment's 64 keys find the
//   runs of equal ids; each run is summed over its tokens in key (= token) order. A run inside the
//   segment is added to dword right away; a run crossing segment boundaries leaves one piece per
//   segment (the piece that starts it as the tail of its segment, the others as heads), and the
//   warp that adds the last piece (an integer atomic counts arrivals; the last re-zeroes it) sums
//   tail + heads in segment order into dword. Whichever warp joins, the sum is the same. A run of
//   one id (the [MASK] and [PAD] ids are a large share of all tokens) is summed by many warps, not
//   walked by one.
//   The other blocks (the first tile's launch only): one thread per position t and column sums
//   dout over b in order into dposition[t] and into per-(t, segment) partials of dsegment; the
//   block taking the last ticket (the context's counters, engine/ticket_counters.h) adds the
//   partials over t in order into dsegment. S <= kEmbeddingMaxSegments.
//   The bits are those of the former two launches (the sort beside the position sums, then the
//   run sums and the segment sums): the same segments and the same order of every addition.
#include "kernels/column_sum.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/dropout_keep.cuh"
#include "kernels/embedding.h"
#include "kernels/embedding_sort.cuh"

namespace electra::cuda {
namespace {

using namespace embedding;  // the sort's key layout (embedding_sort.cuh)

constexpr int kRowThreads = 256;  // a forward block without a sort: 8 tokens
constexpr int kColumnThreads = 256;
constexpr int kSumUnroll = 8;        // dout rows a run sum has in flight
constexpr int kAccumulateWarps = 8;  // warps per block of the accumulate kernel
// dout rows a position sum has in flight: Small's 16384 position sums (T 128 x E 128) are one
// thread each over B = 128 rows, a latency-bound walk (4 in flight: 32 round trips).
constexpr int kBatchUnroll = 16;
constexpr int kTailUnroll = 16;  // dsegment's partial rows in flight in the launch's last block

struct ForwardArgs {
  const int32_t* ids;
  const int32_t* segment_ids;
  const float* word;
  const float* position;
  const float* segment;
  const float* gamma;
  const float* beta;
  float eps;
  DropoutSite site;
  float scale;  // 1 / (1 - p)
  float* mean;
  float* rstd;
  int64_t tokens, len, e, vocab, segments;
};

// Blocks [0, tiles) sort tile blockIdx.x (I keys a thread; I = 0: no sort, tiles = 0); the others
// one token per warp.
template <class T, int V, int I>
__global__ void __launch_bounds__(kSortThreads)
    embedding_forward_kernel(ForwardArgs a, T* sum, T* y, KeyLayout k, SortOut sorted,
                             int64_t tiles) {
  if constexpr (I > 0) {
    if (blockIdx.x < tiles) {
      sort_tile<I>(k, a.ids, sorted, blockIdx.x);
      return;
    }
  }
  a.site.stream = a.site.stream.resolved();  // the step may live in device memory
  const int64_t warps = blockDim.x / kWarpSize;
  const int64_t token = (blockIdx.x - tiles) * warps + threadIdx.x / kWarpSize;
  if (token >= a.tokens) return;
  const int lane = threadIdx.x % kWarpSize;
  const int32_t id = a.ids[token], sid = a.segment_ids[token];
  const bool valid = id >= 0 && id < a.vocab && sid >= 0 && sid < a.segments;
  const int64_t t = token % a.len, e = a.e;
  T* const row = sum + token * e;
  float v[V], p[V], s[V], g[V], b[V], acc = 0;
  for (int64_t c = lane * V; c < e; c += kWarpSize * V) {
    if (valid) {
      load_vec<V>(a.word + id * e + c, v);
      load_vec<V>(a.position + t * e + c, p);
      load_vec<V>(a.segment + sid * e + c, s);
      // Rounded as stored: the statistics describe the saved sum.
      for (int j = 0; j < V; ++j) v[j] = to_float(from_float<T>(v[j] + p[j] + s[j]));
    } else {
      for (int j = 0; j < V; ++j) v[j] = __int_as_float(0x7fc00000);  // NaN marks a bad id
    }
    for (int j = 0; j < V; ++j) acc += v[j];
    store_vec<V>(row + c, v);
  }
  const float mu = warp_sum(acc) / static_cast<float>(e);
  float sq = 0;
  for (int64_t c = lane * V; c < e; c += kWarpSize * V) {
    load_vec<V>(row + c, v);  // the lane's own stores: no synchronisation
    for (int j = 0; j < V; ++j) sq += (v[j] - mu) * (v[j] - mu);
  }
  const float rs = 1.0f / sqrtf(warp_sum(sq) / static_cast<float>(e) + a.eps);
  for (int64_t c = lane * V; c < e; c += kWarpSize * V) {
    // The mask first: its Philox rounds run before the row's registers fill.
    const uint32_t keep = a.site.p > 0 ? keep_bits<V>(a.site, token * e + c) : ~0u;
    load_vec<V>(row + c, v);
    load_vec<V>(a.gamma + c, g);
    load_vec<V>(a.beta + c, b);
    for (int j = 0; j < V; ++j) {
      const float normed = (v[j] - mu) * rs * g[j] + b[j];
      v[j] = (keep >> j) & 1u ? normed * a.scale : 0.0f;
    }
    store_vec<V>(y + token * e + c, v);
  }
  if (lane == 0) {
    a.mean[token] = mu;
    a.rstd[token] = rs;
  }
}

struct PositionArgs {
  const int32_t* segment_ids;
  float* dposition;
  float* partial;  // [T, S, E]
  int64_t batch, len, e, segments;
};

// Thread i = t * E + column: dposition[t] += sum_b dout[b, t]; partial[t, s] = sum of dout[b, t]
// over b with segment s.
template <class T>
__device__ void position_segment(const T* dout, const PositionArgs& a, int64_t i) {
  if (i >= a.len * a.e) return;
  const int64_t t = i / a.e, c = i % a.e;
  float pos = 0, seg[kEmbeddingMaxSegments] = {};
  // kBatchUnroll rows' loads in flight, then added in b order.
  for (int64_t b0 = 0; b0 < a.batch; b0 += kBatchUnroll) {
    float v[kBatchUnroll];
    int32_t sid[kBatchUnroll];
#pragma unroll
    for (int u = 0; u < kBatchUnroll; ++u) {
      if (b0 + u < a.batch) {
        v[u] = to_float(dout[((b0 + u) * a.len + t) * a.e + c]);
        sid[u] = a.segment_ids[(b0 + u) * a.len + t];
      }
    }
#pragma unroll
    for (int u = 0; u < kBatchUnroll; ++u) {
      if (b0 + u < a.batch) {
        pos += v[u];
#pragma unroll
        for (int s = 0; s < kEmbeddingMaxSegments; ++s) {
          // + 0 leaves a sum that started at +0 unchanged (it is never -0): seg stays in
          // registers, where seg[sid] += v would index it in local memory.
          seg[s] += s == sid[u] ? v[u] : 0.0f;
        }
      }
    }
  }
  a.dposition[t * a.e + c] += pos;
#pragma unroll
  for (int s = 0; s < kEmbeddingMaxSegments; ++s) {  // a fixed bound keeps seg in registers
    if (s < a.segments) a.partial[(t * a.segments + s) * a.e + c] = seg[s];
  }
}

// V f32 or bf16 columns as f32: V = 4 in one 16-byte (f32) or 8-byte (bf16) access.
template <class T>
struct alignas(4 * sizeof(T)) Quad {
  T v[4];
};
template <int V, class T>
__device__ __forceinline__ void load_cols(const T* p, float* out) {
  if constexpr (V == 1) {
    out[0] = to_float(p[0]);
  } else {
    static_assert(V == 4);
    const Quad<T> q = *reinterpret_cast<const Quad<T>*>(p);
    for (int j = 0; j < 4; ++j) out[j] = to_float(q.v[j]);
  }
}
// An f32 piece of a run, which another warp of the launch may read: written and read at the L2,
// past the SMs' L1.
template <int V>
__device__ __forceinline__ void store_piece(float* p, const float* in) {
  if constexpr (V == 1) {
    __stcg(p, in[0]);
  } else {
    __stcg(reinterpret_cast<float4*>(p), make_float4(in[0], in[1], in[2], in[3]));
  }
}
template <int V>
__device__ __forceinline__ void load_piece(const float* p, float* out) {
  if constexpr (V == 1) {
    out[0] = __ldcg(p);
  } else {
    const float4 q = __ldcg(reinterpret_cast<const float4*>(p));
    out[0] = q.x, out[1] = q.y, out[2] = q.z, out[3] = q.w;
  }
}
template <int V>
__device__ __forceinline__ void store_cols(float* p, const float* in) {
  if constexpr (V == 1) {
    p[0] = in[0];
  } else {
    Quad<float> q;
    for (int j = 0; j < 4; ++j) q.v[j] = in[j];
    *reinterpret_cast<Quad<float>*>(p) = q;
  }
}
// row += acc, in one 16-byte load and store for V = 4.
template <int V>
__device__ __forceinline__ void add_cols(float* row, const float* acc) {
  float r[V];
  load_cols<V>(row, r);
  for (int j = 0; j < V; ++j) r[j] = r[j] + acc[j];
  store_cols<V>(row, r);
}

__device__ __forceinline__ uint64_t ballot64(bool low, bool high) {
  return __ballot_sync(kFullMask, low) | uint64_t{__ballot_sync(kFullMask, high)} << kWarpSize;
}

struct WordArgs {
  const uint32_t* keys;
  const int32_t* first;
  const int32_t* last;
  uint32_t* counters;
  float* dword;
  float* head;  // [segments, E]: the piece of a run that continues one from earlier segments
  float* tail;  // [segments, E]: the piece that starts a run going on past the segment
  int64_t e;
};

// One warp, segment q (global index; its tile's keys are [base, base + n)), columns of `chunk`:
// each run of equal ids among the segment's sorted keys is summed over its tokens in order.
template <class T, int V>
__device__ void word_grad_segment(const KeyLayout& k, const WordArgs& w, const T* dout,
                                  int64_t base, int64_t n, int64_t q, int64_t chunk) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t c = (chunk * kWarpSize + lane) * V;
  const bool active = c < w.e;  // lanes past E still take part in the ballots
  const int64_t begin = q * kRunSegment, end = base + n;
  const int count = static_cast<int>(end - begin < kRunSegment ? end - begin : kRunSegment);
  auto id_at = [&](int64_t p) { return p >= base && p < end ? key_id(w.keys[p], k) : -1; };
  const uint32_t k0 = lane < count ? w.keys[begin + lane] : kPadKey;
  const uint32_t k1 = lane + kWarpSize < count ? w.keys[begin + kWarpSize + lane] : kPadKey;
  const int32_t id0 = key_id(k0, k), id1 = key_id(k1, k);
  const int32_t before = id_at(begin - 1);
  const int32_t after = count == kRunSegment ? id_at(begin + kRunSegment) : -1;
  // Bit p of `starts`: key p opens a run (its predecessor has another id).
  int32_t prev0 = __shfl_up_sync(kFullMask, id0, 1), prev1 = __shfl_up_sync(kFullMask, id1, 1);
  const int32_t last0 = __shfl_sync(kFullMask, id0, kWarpSize - 1);
  if (lane == 0) prev0 = before, prev1 = last0;
  const uint64_t valid = ballot64(id0 >= 0, id1 >= 0);  // a prefix: no-key entries sort last
  const uint64_t starts = ballot64(id0 >= 0 && id0 != prev0, id1 >= 0 && id1 != prev1);
  const int keys = __popcll(valid);
  const uint32_t token_mask = (1u << k.shift) - 1u;
  uint64_t cuts = starts | (valid & 1u);  // the segment's pieces begin here
  while (cuts != 0) {
    const int a = __ffsll(static_cast<long long>(cuts)) - 1;
    cuts &= cuts - 1;
    const int b = cuts != 0 ? __ffsll(static_cast<long long>(cuts)) - 1 : keys;
    const int32_t id = __shfl_sync(kFullMask, a < kWarpSize ? id0 : id1, a % kWarpSize);
    const bool from_before = a == 0 && id == before;
    const bool goes_on = b == kRunSegment && id == after;
    float acc[V];
    for (int j = 0; j < V; ++j) acc[j] = 0.0f;
    for (int i = a; i < b; i += kSumUnroll) {
      float d[kSumUnroll][V];
#pragma unroll
      for (int u = 0; u < kSumUnroll; ++u) {
        const uint32_t key =
            __shfl_sync(kFullMask, i + u < kWarpSize ? k0 : k1, (i + u) % kWarpSize);
        if (active && i + u < b) load_cols<V>(dout + (base + (key & token_mask)) * w.e + c, d[u]);
      }
#pragma unroll
      for (int u = 0; u < kSumUnroll; ++u) {
        if (active && i + u < b) {
          for (int j = 0; j < V; ++j) acc[j] += d[u][j];
        }
      }
    }
    if (!from_before && !goes_on) {  // the whole run is in this segment
      if (active) add_cols<V>(w.dword + id * w.e + c, acc);
      continue;
    }
    // A piece of a run over segments q0 .. q1: the warp adding the last of its q1 - q0 + 1
    // pieces adds tail[q0] + head[q0 + 1] + ... + head[q1] to dword.
    const int64_t q0 = from_before ? w.first[q] : q, q1 = goes_on ? w.last[q] : q;
    if (active) store_piece<V>((from_before ? w.head : w.tail) + q * w.e + c, acc);
    __threadfence();  // the piece is visible before its arrival is counted
    __syncwarp();
    uint32_t arrived = 0;
    if (lane == 0) arrived = atomicAdd(w.counters + q0 * k.chunks + chunk, 1u);
    if (__shfl_sync(kFullMask, arrived, 0) != static_cast<uint64_t>(q1 - q0)) continue;
    // The last arrival: the counter goes back to zero (a backward run again finds it so).
    if (lane == 0) w.counters[q0 * k.chunks + chunk] = 0;
    __threadfence();  // the other pieces are read after their arrivals
    if (!active) continue;
    load_piece<V>(w.tail + q0 * w.e + c, acc);
    for (int64_t r = q0 + 1; r <= q1; ++r) {
      float piece[V];
      load_piece<V>(w.head + r * w.e + c, piece);
      for (int j = 0; j < V; ++j) acc[j] += piece[j];
    }
    add_cols<V>(w.dword + id * w.e + c, acc);
  }
}

// Launch of tile `tile`: blocks [0, word_blocks) one warp per (segment, column chunk) of the
// tile; the others (tile 0 only) the position sums and dsegment partials, the last of them to
// finish (of position_blocks) dsegment[s, column] += the partials over t in order.
template <class T, int V>
__global__ void accumulate_kernel(KeyLayout k, WordArgs w, const T* dout, int64_t tile,
                                  int64_t word_blocks, PositionArgs pos, uint32_t* ticket,
                                  float* dsegment) {
  if (blockIdx.x >= word_blocks) {
    position_segment(dout, pos,
                     (blockIdx.x - word_blocks) * static_cast<int64_t>(blockDim.x) + threadIdx.x);
    if (!last_arrival(ticket, gridDim.x - static_cast<uint32_t>(word_blocks))) return;
    // The partials over t in order, kTailUnroll positions' loads in flight (T of them one after
    // another took T L2 round trips, the serial tail of the launch: 512 at Base's T).
    const int64_t width = pos.segments * w.e;
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {  // i = s * E + column
      float total = 0;
      int64_t t = 0;
      for (; t + kTailUnroll <= pos.len; t += kTailUnroll) {
        float v[kTailUnroll];
#pragma unroll
        for (int u = 0; u < kTailUnroll; ++u) v[u] = __ldcg(pos.partial + (t + u) * width + i);
#pragma unroll
        for (int u = 0; u < kTailUnroll; ++u) total += v[u];
      }
      for (; t < pos.len; ++t) total += __ldcg(pos.partial + t * width + i);
      dsegment[i] += total;
    }
    return;
  }
  const int64_t base = tile * kTileKeys, n = tile_tokens(k.tokens, tile);
  const int64_t unit =
      blockIdx.x * static_cast<int64_t>(kAccumulateWarps) + threadIdx.x / kWarpSize;
  if (unit >= ceil_div(n, kRunSegment) * k.chunks) return;
  word_grad_segment<T, V>(k, w, dout, base, n, base / kRunSegment + unit / k.chunks,
                          unit % k.chunks);
}

void check_tables(const char* op, std::initializer_list<const Tensor*> tables) {
  for (const Tensor* t : tables) check_dtype(*t, DType::F32, op);
}

// The forward; with a workspace, its first blocks sort the keys (I keys a thread, the fewest warps
// that hold the first, largest tile; the row blocks get the same threads and shared memory).
template <class T>
void forward(Context& ctx, const EmbeddingForward& op) {
  const int64_t tokens = op.ids.numel(), e = op.word.dim(1);
  if (tokens == 0 || e == 0) return;
  ForwardArgs a{.ids = op.ids.ptr<int32_t>(),
                .segment_ids = op.segment_ids.ptr<int32_t>(),
                .word = op.word.ptr<float>(),
                .position = op.position.ptr<float>(),
                .segment = op.segment.ptr<float>(),
                .gamma = op.norm.gamma.ptr<float>(),
                .beta = op.norm.beta.ptr<float>(),
                .eps = op.norm.eps,
                .site = op.norm.site,
                .scale = 1.0f / (1.0f - op.norm.site.p),
                .mean = op.mean.ptr<float>(),
                .rstd = op.rstd.ptr<float>(),
                .tokens = tokens,
                .len = op.ids.dim(1),
                .e = e,
                .vocab = op.word.dim(0),
                .segments = op.segment.dim(0)};
  T* sum = static_cast<T*>(op.sum.data);
  T* y = static_cast<T*>(op.y.data);
  const bool vec = vectorizable(e, {a.word, a.position, a.segment, a.gamma, a.beta, sum, y});
  auto launch = [&](auto kernel, int threads, int64_t tiles, size_t shared, const KeyLayout& k,
                    const SortOut& sorted) {
    if (shared > 0) {
      ELECTRA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(shared)));
    }
    const auto blocks = static_cast<unsigned>(tiles + ceil_div(tokens, threads / kWarpSize));
    kernel<<<blocks, threads, shared, ctx.stream()>>>(a, sum, y, k, sorted, tiles);
    ELECTRA_CUDA_CHECK_LAUNCH();
  };
  if (op.workspace.data == nullptr) {
    if (vec) {
      launch(embedding_forward_kernel<T, 8, 0>, kRowThreads, 0, 0, KeyLayout{}, SortOut{});
    } else {
      launch(embedding_forward_kernel<T, 1, 0>, kRowThreads, 0, 0, KeyLayout{}, SortOut{});
    }
    return;
  }
  const char* name = "embedding_forward";
  const EmbeddingWorkspace layout =
      embedding_workspace(op.ids.dim(0), op.ids.dim(1), op.segment.dim(0), e);
  const SortOut sorted = sort_out(name, op.workspace, layout);
  // Every counter of the workspace is zeroed: the backward's chunks are at most these.
  const KeyLayout k = key_layout(name, tokens, a.vocab, ceil_div(e, kWarpSize));
  const int64_t tiles = ceil_div(tokens, kTileKeys), tile_keys = tile_tokens(tokens, 0);
  auto sort = [&](auto kernel, int items) {
    const auto threads =
        static_cast<int>(ceil_div(ceil_div(tile_keys, items), kWarpSize) * kWarpSize);
    launch(kernel, threads, tiles, static_cast<size_t>(threads) * items * sizeof(uint32_t), k,
           sorted);
  };
  const bool half = tile_keys <= kTileKeys / 2;
  if (vec && half) {
    sort(embedding_forward_kernel<T, 8, 16>, 16);
  } else if (vec) {
    sort(embedding_forward_kernel<T, 8, 32>, 32);
  } else if (half) {
    sort(embedding_forward_kernel<T, 1, 16>, 16);
  } else {
    sort(embedding_forward_kernel<T, 1, 32>, 32);
  }
}

template <class T>
void backward(Context& ctx, const Tensor& dout, const Tensor& ids, const Tensor& segment_ids,
              const Tensor& dword, const Tensor& dposition, const Tensor& dsegment,
              const Tensor& workspace) {
  const int64_t batch = ids.dim(0), len = ids.dim(1), tokens = ids.numel(), e = dword.dim(1);
  const int64_t segments = dsegment.dim(0);
  if (tokens == 0 || e == 0) return;
  const char* name = "embedding_backward";
  ELECTRA_CHECK(segments <= kEmbeddingMaxSegments, name, " (cuda): ", segments,
                " segment types, the GPU supports at most ", kEmbeddingMaxSegments);
  const EmbeddingWorkspace layout = embedding_workspace(batch, len, segments, e);
  const SortOut sorted = sort_out(name, workspace, layout);
  char* ws = static_cast<char*>(workspace.data);
  const T* d = static_cast<const T*>(dout.data);
  const int v = e % 4 == 0 && is_aligned16(d) && is_aligned16(dword.data) ? 4 : 1;
  const KeyLayout k = key_layout(name, tokens, dword.dim(0), ceil_div(e, kWarpSize * v));
  const WordArgs w{.keys = sorted.keys,
                   .first = sorted.first,
                   .last = sorted.last,
                   .counters = sorted.counters,
                   .dword = dword.ptr<float>(),
                   .head = reinterpret_cast<float*>(ws + layout.head),
                   .tail = reinterpret_cast<float*>(ws + layout.tail),
                   .e = e};
  const PositionArgs pos{.segment_ids = segment_ids.ptr<int32_t>(),
                         .dposition = dposition.ptr<float>(),
                         .partial = reinterpret_cast<float*>(ws + layout.partial),
                         .batch = batch,
                         .len = len,
                         .e = e,
                         .segments = segments};
  uint32_t* ticket = ticket_counters(ctx);
  for (int64_t tile = 0; tile < ceil_div(tokens, kTileKeys); ++tile) {
    const int64_t n = tile_tokens(tokens, tile);
    const int64_t word_blocks = ceil_div(ceil_div(n, kRunSegment) * k.chunks, kAccumulateWarps);
    const int64_t position_blocks = tile == 0 ? ceil_div(len * e, kColumnThreads) : 0;
    const auto blocks = static_cast<unsigned>(word_blocks + position_blocks);
    const int threads = kAccumulateWarps * kWarpSize;
    if (v == 4) {
      accumulate_kernel<T, 4><<<blocks, threads, 0, ctx.stream()>>>(k, w, d, tile, word_blocks, pos,
                                                                    ticket, dsegment.ptr<float>());
    } else {
      accumulate_kernel<T, 1><<<blocks, threads, 0, ctx.stream()>>>(k, w, d, tile, word_blocks, pos,
                                                                    ticket, dsegment.ptr<float>());
    }
    ELECTRA_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void EmbeddingForward::cuda(Context& ctx) const {
  cuda::check_tables("embedding_forward (cuda): tables, gamma, beta and statistics must be f32",
                     {&word, &position, &segment, &norm.gamma, &norm.beta, &mean, &rstd});
  ELECTRA_CHECK(sum.dtype == y.dtype, kName, " (cuda): sum ", sum.str(), " and y ", y.str(),
                " differ in dtype");
  cuda::dispatch_activation(sum, kName,
                            [&](auto tag) { cuda::forward<decltype(tag)>(ctx, *this); });
}

void EmbeddingBackward::cuda(Context& ctx) const {
  cuda::check_tables("embedding_backward (cuda): table gradients must be f32",
                     {&dword, &dposition, &dsegment});
  cuda::dispatch_activation(dout, kName, [&](auto tag) {
    cuda::backward<decltype(tag)>(ctx, dout, ids, segment_ids, dword, dposition, dsegment,
                                  workspace);
  });
}

}  // namespace electra
