// The embedding backward's sort of token keys (kernels/embedding.h), run by the forward's first
// blocks (the keys depend on the ids only) and read by the backward: the key layout both launches
// share and the one-block sort of a tile.
//
// Block r < tiles sorts the keys (id << s | token) of tile r's tokens (id V for padding and bad
// ids, so they sort after every real id) in shared memory: an LSD radix sort on the id bits, 4 bits
// a pass (4 passes for V = 30522), each pass a warp multi-split (4 ballots give each key the lanes
// holding the same digit; its rank among them and the warp's running count per digit place it), a
// scan of the (digit, warp) counts and a scatter. The block holds at most kEmbeddingSortTileKeys
// keys, 16 or 32 a thread (the fewer that fit), in 128 KiB of shared memory. The sort is stable
// and the keys start in token order, so each id's tokens stay in ascending order. It then writes
// the sorted keys, per segment of kEmbeddingRunSegment sorted keys the segments where the runs at
// its two ends begin and end (binary searches in shared memory), and zeroes the segments' arrival
// counters.
#pragma once

#include <bit>

#include "kernels/cuda_common.cuh"
#include "kernels/embedding.h"

namespace electra::cuda::embedding {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kTileKeys = kEmbeddingSortTileKeys;
constexpr int64_t kRunSegment = kEmbeddingRunSegment;
constexpr int kSortThreads = 1024;  // most threads of a sort block
constexpr int kDigitBits = 4, kDigits = 1 << kDigitBits;
constexpr uint32_t kPadKey = ~uint32_t{0};  // past the tile's tokens: sorts last

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
__device__ inline int first_field_at_least(const uint32_t* keys, int lo, int hi, uint64_t f,
                                           int shift) {
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

// The key layout of `tokens` tokens over `vocab` word rows, `chunks` column chunks; throws Error
// naming `op` when the keys do not fit 32 bits.
inline KeyLayout key_layout(const char* op, int64_t tokens, int64_t vocab, int64_t chunks) {
  KeyLayout k{.tokens = tokens, .vocab = vocab, .chunks = chunks};
  const int64_t tile_keys = tile_tokens(tokens, 0);
  k.shift = static_cast<int>(std::bit_width(static_cast<uint64_t>(tile_keys - 1)));
  const int id_bits = static_cast<int>(std::bit_width(static_cast<uint64_t>(vocab)));
  ELECTRA_CHECK(id_bits + k.shift <= 32, op, " (cuda): ", vocab, " word rows (ids up to ", vocab,
                " for the skipped tokens: ", id_bits, " bits) and ", tile_keys,
                " tokens per sort tile (", k.shift, " bits) do not fit the 32-bit sort keys");
  k.passes = static_cast<int>(ceil_div(id_bits, kDigitBits));
  return k;
}

// The sort's outputs in a workspace of embedding_workspace(b, t, s, e)'s layout, checked (on cuda,
// 16-byte aligned, large enough).
inline SortOut sort_out(const char* op, const Tensor& workspace, const EmbeddingWorkspace& layout) {
  ELECTRA_CHECK(workspace.device == Device::CUDA && workspace.nbytes() >= layout.bytes &&
                    is_aligned16(workspace.data),
                op, " (cuda): workspace ", workspace.str(), " must be on cuda, ",
                "16-byte aligned, with at least ", layout.bytes, " bytes");
  char* ws = static_cast<char*>(workspace.data);
  return SortOut{.keys = reinterpret_cast<uint32_t*>(ws + layout.keys),
                 .first = reinterpret_cast<int32_t*>(ws + layout.first),
                 .last = reinterpret_cast<int32_t*>(ws + layout.last),
                 .counters = reinterpret_cast<uint32_t*>(ws + layout.counters)};
}

}  // namespace electra::cuda::embedding
