// embedding kernels.
// Forward: one warp per token, 8 tokens per 256-thread block, lanes over columns in groups of V
// (V = 8 with 16-byte accesses when E % 8 == 0 and the pointers are aligned, else 1). The three
// table rows are added in f32 in the order word + position + segment and rounded once.
// Backward, deterministic and without float atomics, in two launches (per sort tile of
// kEmbeddingSortTileKeys tokens, the second of them):
//   1. sort_and_position_kernel. Block r < tiles sorts the keys (id << s | token) of tile r's
//      tokens (id V for padding and bad ids, so they sort after every real id) in shared memory:
//      an LSD radix sort on the id bits, 4 bits a pass (4 passes for V = 30522), each pass a warp
//      multi-split (4 ballots give each key the lanes holding the same digit; its rank among them
//      and the warp's running count per digit place it), a scan of the (digit, warp) counts and a
//      scatter. The block holds at most kEmbeddingSortTileKeys keys, 16 or 32 a thread (the fewer
//      that fit), in 128 KiB of shared memory. The sort is stable and the keys start in token
//      order, so each id's tokens stay in ascending order. It then writes the sorted keys, per
//      segment of kRunSegment sorted keys the segments where the runs at its two ends begin and end
//      (binary searches in shared memory), and zeroes the segments' arrival counters. The other
//      blocks (one thread per position t and column) sum dout over b in order into dposition[t] and
//      into per-(t, segment) partials of dsegment: they run beside the sort, which occupies one SM.
//   2. accumulate_kernel. One warp per (segment of kRunSegment sorted keys, chunk of 32 * V
//      columns, V = 4 with 16-byte f32 accesses): two ballots over the segment's 64 keys find
//      the runs of equal ids; each run is summed over its tokens in key (= token) order. A run
//      inside the segment is added to dword right away; a run crossing segment boundaries leaves
//      one piece per segment (the piece that starts it as the tail of its segment, the others as
//      heads), and the warp that adds the last piece (an integer atomic counts arrivals) sums
//      tail + heads in segment order into dword. Whichever warp joins, the sum is the same, so the
//      bits are those of the earlier two-launch join. Its last blocks add the dsegment partials
//      over t in order. S <= kEmbeddingMaxSegments.
//   A run of one id (the [MASK] and [PAD] ids are a large share of all tokens) is summed by many
//   warps, not walked by one. Up to one tile, the bits are those of the bitonic sort this
//   replaced (same segments, the same order of every addition).
#include <bit>

#include "kernels/cuda_common.cuh"
#include "kernels/embedding.h"

namespace electra::cuda {
namespace {

constexpr int kTokensPerBlock = 8;
constexpr int kColumnThreads = 256;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kTileKeys = kEmbeddingSortTileKeys;
constexpr int64_t kRunSegment = kEmbeddingRunSegment;
constexpr int kSortThreads = 1024;  // most threads of a sort block
constexpr int kDigitBits = 4, kDigits = 1 << kDigitBits;
constexpr uint32_t kPadKey = ~uint32_t{0};  // past the tile's tokens: sorts last
constexpr int kSumUnroll = 8;               // dout rows a run sum has in flight
constexpr int kAccumulateWarps = 8;         // warps per block of the accumulate kernel
constexpr int kBatchUnroll = 4;             // dout rows a position sum has in flight

template <class T, int V>
__global__ void embedding_forward_kernel(const int32_t* ids, const int32_t* segment_ids,
                                         const float* word, const float* position,
                                         const float* segment, T* out, int64_t tokens, int64_t len,
                                         int64_t e, int64_t vocab, int64_t segments) {
  const int64_t token =
      blockIdx.x * static_cast<int64_t>(kTokensPerBlock) + threadIdx.x / kWarpSize;
  if (token >= tokens) return;
  const int lane = threadIdx.x % kWarpSize;
  const int32_t id = ids[token], sid = segment_ids[token];
  const bool valid = id >= 0 && id < vocab && sid >= 0 && sid < segments;
  const int64_t t = token % len;
  float w[V], p[V], s[V];
  for (int64_t c = lane * V; c < e; c += kWarpSize * V) {
    if (valid) {
      load_vec<V>(word + id * e + c, w);
      load_vec<V>(position + t * e + c, p);
      load_vec<V>(segment + sid * e + c, s);
      for (int j = 0; j < V; ++j) w[j] = w[j] + p[j] + s[j];
    } else {
      for (int j = 0; j < V; ++j) w[j] = __int_as_float(0x7fc00000);  // NaN marks a bad id
    }
    store_vec<V>(out + token * e + c, w);
  }
}

// The tokens of sort tile `tile` (all tiles but the last hold kTileKeys).
__host__ __device__ __forceinline__ int64_t tile_tokens(int64_t tokens, int64_t tile) {
  const int64_t rest = tokens - tile * kTileKeys;
  return rest < kTileKeys ? rest : kTileKeys;
}

// What both launches know about the sort keys (id << shift | token in its tile).
struct KeyLayout {
  int64_t tokens = 0, vocab = 0;
  int shift = 0;       // bit_width(tile tokens - 1)
  int passes = 0;      // radix passes over the id bits: ceil(bit_width(vocab) / kDigitBits)
  int64_t chunks = 0;  // column chunks of the accumulate kernel (its arrival counters)
};

// The id of a key, or -1 for padding and bad ids (keys holding id V, or kPadKey).
__device__ __forceinline__ int32_t key_id(uint32_t key, const KeyLayout& k) {
  const uint32_t id = key >> k.shift;
  return id < k.vocab ? static_cast<int32_t>(id) : -1;
}

// The ballots of the bits of each lane's digit.
struct DigitBallots {
  uint32_t bit[kDigitBits];
  __device__ __forceinline__ explicit DigitBallots(uint32_t digit) {
#pragma unroll
    for (int b = 0; b < kDigitBits; ++b) bit[b] = __ballot_sync(kFullMask, (digit >> b) & 1u);
  }
  // The lanes whose digit is d.
  __device__ __forceinline__ uint32_t lanes_with(uint32_t d) const {
    uint32_t m = kFullMask;
#pragma unroll
    for (int b = 0; b < kDigitBits; ++b) m &= ((d >> b) & 1u) ? bit[b] : ~bit[b];
    return m;
  }
};

// The first position in sorted keys[lo, hi) whose id field is at least f (hi if none).
__device__ int first_field_at_least(const uint32_t* keys, int lo, int hi, uint64_t f, int shift) {
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if ((keys[mid] >> shift) < f) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

struct SortOut {
  uint32_t* keys;      // sorted keys, tile r at r * kTileKeys
  int32_t* first;      // per segment: the segment where the run at its first key begins
  int32_t* last;       // per segment: the segment where the run at its last key ends
  uint32_t* counters;  // per (segment, chunk): pieces of a crossing run added so far
};

// One block sorts tile `tile` (I keys a thread, blockDim.x * I >= the tile's tokens) by id,
// stably, in shared memory; then writes the keys, first, last and zeroed counters of its
// segments.
template <int I>
__device__ void sort_tile(const KeyLayout& k, const int32_t* ids, const SortOut& out,
                          int64_t tile) {
  extern __shared__ uint32_t sorted[];                                    // blockDim.x * I keys
  __shared__ uint32_t digit_warp[kDigits][kSortThreads / kWarpSize + 1];  // counts, then starts
  __shared__ uint32_t scan_sums[kSortThreads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize, padded = blockDim.x * I;
  const int64_t base = tile * kTileKeys;
  const int n = static_cast<int>(tile_tokens(k.tokens, tile));
  for (int x = threadIdx.x; x < padded; x += blockDim.x) {
    uint32_t key = kPadKey;
    if (x < n) {
      const int32_t id = ids[base + x];
      const auto field = static_cast<uint32_t>(id >= 0 && id < k.vocab ? id : k.vocab);
      key = field << k.shift | static_cast<uint32_t>(x);
    }
    sorted[x] = key;
  }
  __syncthreads();
  // A pass's key j is held by warp j / (32 I), item (j / 32) % I, lane j % 32: the order (warp,
  // item, lane) is the keys' order, which the pass keeps among equal digits.
  const int own = warp * kWarpSize * I + lane;
  const uint32_t lane_digit = lane % kDigits;  // the digit whose count this lane keeps
  for (int pass = 0; pass < k.passes; ++pass) {
    const int at = k.shift + pass * kDigitBits;
    uint32_t key[I];
#pragma unroll
    for (int i = 0; i < I; ++i) key[i] = sorted[own + i * kWarpSize];
    uint32_t count = 0;  // of lane_digit in the warp's keys
#pragma unroll
    for (int i = 0; i < I; ++i) {
      count += __popc(DigitBallots((key[i] >> at) % kDigits).lanes_with(lane_digit));
    }
    if (lane < kDigits) digit_warp[lane][warp] = count;
    __syncthreads();
    // Exclusive scan of the counts in (digit, warp) order: where each warp's keys of each digit
    // start. Cells 16 * warps <= 512, so at most 16 warps' partial sums.
    const int cells = kDigits * warps, cell = threadIdx.x;
    const uint32_t v = cell < cells ? digit_warp[cell / warps][cell % warps] : 0;
    uint32_t inclusive = v;
#pragma unroll
    for (int o = 1; o < kWarpSize; o *= 2) {
      const uint32_t up = __shfl_up_sync(kFullMask, inclusive, o);
      if (lane >= o) inclusive += up;
    }
    if (lane == kWarpSize - 1) scan_sums[warp] = inclusive;
    __syncthreads();
    if (cell < cells) {
      uint32_t before = 0;
      for (int w = 0; w < warp; ++w) before += scan_sums[w];
      digit_warp[cell / warps][cell % warps] = before + inclusive - v;
    }
    __syncthreads();
    // Scatter (every key of the pass is in registers): a key goes to its digit's next place in
    // this warp, plus the lanes below it with the same digit.
    uint32_t next = digit_warp[lane_digit][warp];
#pragma unroll
    for (int i = 0; i < I; ++i) {
      const uint32_t d = (key[i] >> at) % kDigits;
      const DigitBallots ballots(d);
      const uint32_t below = __popc(ballots.lanes_with(d) & ((1u << lane) - 1u));
      sorted[__shfl_sync(kFullMask, next, static_cast<int>(d)) + below] = key[i];
      next += __popc(ballots.lanes_with(lane_digit));
    }
    __syncthreads();
  }
  for (int x = threadIdx.x; x < n; x += blockDim.x) out.keys[base + x] = sorted[x];
  const int64_t seg0 = base / kRunSegment;
  for (int q = threadIdx.x; q < ceil_div(n, kRunSegment); q += blockDim.x) {
    const int lo = q * static_cast<int>(kRunSegment);
    const int hi = std::min(n, lo + static_cast<int>(kRunSegment)) - 1;
    const uint32_t lo_id = sorted[lo] >> k.shift, hi_id = sorted[hi] >> k.shift;
    const int run_begin = first_field_at_least(sorted, 0, lo, lo_id, k.shift);
    const int run_end = first_field_at_least(sorted, hi, n, uint64_t{hi_id} + 1, k.shift);
    out.first[seg0 + q] = static_cast<int32_t>(seg0 + run_begin / kRunSegment);
    out.last[seg0 + q] = static_cast<int32_t>(seg0 + (run_end - 1) / kRunSegment);
    for (int64_t c = 0; c < k.chunks; ++c) out.counters[(seg0 + q) * k.chunks + c] = 0;
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
  // kBatchUnroll rows' loads in flight, then added in b order. These blocks share the sort's
  // launch and so its shared memory: one or two blocks of them fit an SM.
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

// Launch 1: blocks [0, tiles) sort, the others the position and segment partials.
template <class T, int I>
__global__ void __launch_bounds__(kSortThreads)
    sort_and_position_kernel(KeyLayout k, const int32_t* ids, SortOut out, int64_t tiles,
                             const T* dout, PositionArgs pos) {
  if (blockIdx.x < tiles) {
    sort_tile<I>(k, ids, out, blockIdx.x);
  } else {
    position_segment(dout, pos,
                     (blockIdx.x - tiles) * static_cast<int64_t>(blockDim.x) + threadIdx.x);
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

// Launch 2 of tile `tile`: blocks [0, word_blocks) one warp per (segment, column chunk) of the
// tile; the others (tile 0 only) dsegment[s, column] += the partials over t in order.
template <class T, int V>
__global__ void accumulate_kernel(KeyLayout k, WordArgs w, const T* dout, int64_t tile,
                                  int64_t word_blocks, const float* partial, float* dsegment,
                                  int64_t len, int64_t segments) {
  if (blockIdx.x >= word_blocks) {
    const int64_t i = (blockIdx.x - word_blocks) * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= segments * w.e) return;  // i = s * E + column
    float sum = 0;
    for (int64_t t = 0; t < len; ++t) sum += partial[t * segments * w.e + i];
    dsegment[i] += sum;
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

template <class T>
void forward(Context& ctx, const Tensor& ids, const Tensor& segment_ids, const Tensor& word,
             const Tensor& position, const Tensor& segment, const Tensor& out) {
  const int64_t tokens = ids.numel(), len = ids.dim(1), e = word.dim(1);
  if (tokens == 0 || e == 0) return;
  const float* w = word.ptr<float>();
  const float* p = position.ptr<float>();
  const float* s = segment.ptr<float>();
  T* y = static_cast<T*>(out.data);
  const unsigned blocks = static_cast<unsigned>(ceil_div(tokens, kTokensPerBlock));
  const int threads = kTokensPerBlock * kWarpSize;
  if (vectorizable(e, {w, p, s, y})) {
    embedding_forward_kernel<T, 8>
        <<<blocks, threads, 0, ctx.stream()>>>(ids.ptr<int32_t>(), segment_ids.ptr<int32_t>(), w, p,
                                               s, y, tokens, len, e, word.dim(0), segment.dim(0));
  } else {
    embedding_forward_kernel<T, 1>
        <<<blocks, threads, 0, ctx.stream()>>>(ids.ptr<int32_t>(), segment_ids.ptr<int32_t>(), w, p,
                                               s, y, tokens, len, e, word.dim(0), segment.dim(0));
  }
  ELECTRA_CUDA_CHECK_LAUNCH();
}

template <class T>
void backward(Context& ctx, const Tensor& dout, const Tensor& ids, const Tensor& segment_ids,
              const Tensor& dword, const Tensor& dposition, const Tensor& dsegment,
              const Tensor& workspace) {
  const int64_t batch = ids.dim(0), len = ids.dim(1), tokens = ids.numel(), e = dword.dim(1);
  const int64_t segments = dsegment.dim(0);
  if (tokens == 0 || e == 0) return;
  ELECTRA_CHECK(segments <= kEmbeddingMaxSegments, "embedding_backward (cuda): ", segments,
                " segment types, the GPU supports at most ", kEmbeddingMaxSegments);
  const EmbeddingWorkspace layout = embedding_workspace(batch, len, segments, e);
  ELECTRA_CHECK(workspace.device == Device::CUDA && workspace.nbytes() >= layout.bytes &&
                    is_aligned16(workspace.data),
                "embedding_backward (cuda): workspace ", workspace.str(), " must be on cuda, ",
                "16-byte aligned, with at least ", layout.bytes, " bytes");
  KeyLayout k{.tokens = tokens, .vocab = dword.dim(0)};
  const int64_t tile_keys = tile_tokens(tokens, 0);
  k.shift = static_cast<int>(std::bit_width(static_cast<uint64_t>(tile_keys - 1)));
  const int id_bits = static_cast<int>(std::bit_width(static_cast<uint64_t>(k.vocab)));
  ELECTRA_CHECK(id_bits + k.shift <= 32, "embedding_backward (cuda): ", k.vocab,
                " word rows (ids up to ", k.vocab, " for the skipped tokens: ", id_bits,
                " bits) and ", tile_keys, " tokens per sort tile (", k.shift,
                " bits) do not fit the 32-bit sort keys");
  k.passes = static_cast<int>(ceil_div(id_bits, kDigitBits));
  char* ws = static_cast<char*>(workspace.data);
  const SortOut out{.keys = reinterpret_cast<uint32_t*>(ws + layout.keys),
                    .first = reinterpret_cast<int32_t*>(ws + layout.first),
                    .last = reinterpret_cast<int32_t*>(ws + layout.last),
                    .counters = reinterpret_cast<uint32_t*>(ws + layout.counters)};
  const WordArgs w{.keys = out.keys,
                   .first = out.first,
                   .last = out.last,
                   .counters = out.counters,
                   .dword = dword.ptr<float>(),
                   .head = reinterpret_cast<float*>(ws + layout.head),
                   .tail = reinterpret_cast<float*>(ws + layout.tail),
                   .e = e};
  float* partial = reinterpret_cast<float*>(ws + layout.partial);
  const T* d = static_cast<const T*>(dout.data);
  const int v = e % 4 == 0 && is_aligned16(d) && is_aligned16(w.dword) ? 4 : 1;
  k.chunks = ceil_div(e, kWarpSize * v);
  const int64_t tiles = ceil_div(tokens, kTileKeys);

  // Launch 1: I keys a thread, the fewest warps that hold the (first, largest) tile.
  const PositionArgs pos{.segment_ids = segment_ids.ptr<int32_t>(),
                         .dposition = dposition.ptr<float>(),
                         .partial = partial,
                         .batch = batch,
                         .len = len,
                         .e = e,
                         .segments = segments};
  auto sort = [&](auto kernel, int items) {
    const auto threads =
        static_cast<int>(ceil_div(ceil_div(tile_keys, items), kWarpSize) * kWarpSize);
    const size_t shared = static_cast<size_t>(threads) * items * sizeof(uint32_t);
    ELECTRA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shared)));
    const auto blocks = static_cast<unsigned>(tiles + ceil_div(len * e, threads));
    kernel<<<blocks, threads, shared, ctx.stream()>>>(k, ids.ptr<int32_t>(), out, tiles, d, pos);
    ELECTRA_CUDA_CHECK_LAUNCH();
  };
  if (tile_keys <= kTileKeys / 2) {
    sort(sort_and_position_kernel<T, 16>, 16);
  } else {
    sort(sort_and_position_kernel<T, 32>, 32);
  }

  // Launch 2, once per tile (the first also sums dsegment).
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int64_t n = tile_tokens(tokens, tile);
    const int64_t word_blocks = ceil_div(ceil_div(n, kRunSegment) * k.chunks, kAccumulateWarps);
    const int64_t finish_blocks = tile == 0 ? ceil_div(segments * e, kColumnThreads) : 0;
    const auto blocks = static_cast<unsigned>(word_blocks + finish_blocks);
    const int threads = kAccumulateWarps * kWarpSize;
    if (v == 4) {
      accumulate_kernel<T, 4><<<blocks, threads, 0, ctx.stream()>>>(
          k, w, d, tile, word_blocks, partial, dsegment.ptr<float>(), len, segments);
    } else {
      accumulate_kernel<T, 1><<<blocks, threads, 0, ctx.stream()>>>(
          k, w, d, tile, word_blocks, partial, dsegment.ptr<float>(), len, segments);
    }
    ELECTRA_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void EmbeddingForward::cuda(Context& ctx) const {
  cuda::check_tables("embedding_forward (cuda): tables must be f32", {&word, &position, &segment});
  cuda::dispatch_activation(out, kName, [&](auto tag) {
    cuda::forward<decltype(tag)>(ctx, ids, segment_ids, word, position, segment, out);
  });
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
