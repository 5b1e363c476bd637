// embedding kernels.
// Forward: one warp per token, 8 tokens per 256-thread block, lanes over columns in groups of V
// (V = 8 with 16-byte accesses when E % 8 == 0 and the pointers are aligned, else 1). The three
// table rows are added in f32 in the order word + position + segment and rounded once.
// Backward, deterministic and without float atomics:
//   dword: keys (id << 32 | token) for the B * T tokens (UINT64_MAX for padding and bad ids) are
//     sorted by a bitonic sort in the workspace (tiles of 2048 keys in shared memory, larger
//     strides by global passes). The sorted positions are then cut into fixed segments of
//     kRunSegment keys: one warp per (segment, chunk of 32 * V columns) sums dout over each run of
//     equal ids inside its segment in token order (the keys sort by token within an id). A run
//     that lies inside one segment is added to dword right away; a run crossing segment
//     boundaries leaves its per-segment pieces in the workspace (the piece that opens a segment
//     as its head, the piece that starts the run as the tail of its segment), and a second pass
//     adds them, tail first and then the heads in segment order, into dword. So a long run (the
//     [MASK] and [PAD] ids are a large share of all tokens) is summed by many warps, not walked by
//     one, and the sums are still the same bits every run. Cost: log2(n)^2 / 2 compare passes
//     over n keys, then one read of dout and of the pieces.
//   dposition and dsegment: one thread per (position t, column) sums dout over b in order into
//     dposition[t] and into per-(t, segment) partials; a second kernel adds the partials over t in
//     order into dsegment. S <= kEmbeddingMaxSegments.
#include "kernels/cuda_common.cuh"
#include "kernels/embedding.h"

namespace electra::cuda {
namespace {

constexpr int kTokensPerBlock = 8;
constexpr int kTile = 2048;  // keys sorted per block in shared memory
constexpr int kTileThreads = kTile / 2;
constexpr int kColumnThreads = 256;
constexpr uint64_t kNoKey = ~uint64_t{0};
constexpr int64_t kRunSegment = kEmbeddingRunSegment;

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

__global__ void make_keys_kernel(const int32_t* ids, uint64_t* keys, int64_t tokens, int64_t padded,
                                 int64_t vocab) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= padded) return;
  uint64_t key = kNoKey;
  if (i < tokens && ids[i] >= 0 && ids[i] < vocab) {
    key = (static_cast<uint64_t>(ids[i]) << 32) | static_cast<uint64_t>(i);
  }
  keys[i] = key;
}

// Compare-exchange of keys i < l for the bitonic stage of size k: ascending where i & k == 0.
__device__ __forceinline__ void order_pair(uint64_t& a, uint64_t& b, bool ascending) {
  if ((a > b) == ascending) {
    const uint64_t tmp = a;
    a = b;
    b = tmp;
  }
}

// The index of the lower element of pair `t` at stride j.
__device__ __forceinline__ int64_t pair_low(int64_t t, int64_t j) {
  return (t / j) * 2 * j + (t % j);
}

// Stages k = 2 .. kTile (full sort) or, with k_fixed > 0, the strides j < kTile of stage k_fixed,
// on one tile of kTile keys in shared memory.
__global__ void bitonic_tile_kernel(uint64_t* keys, int64_t k_fixed) {
  __shared__ uint64_t tile[kTile];
  const int64_t base = blockIdx.x * static_cast<int64_t>(kTile);
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = keys[base + i];
  __syncthreads();
  const int64_t k_begin = k_fixed > 0 ? k_fixed : 2;
  const int64_t k_end = k_fixed > 0 ? k_fixed : kTile;
  for (int64_t k = k_begin; k <= k_end; k *= 2) {
    for (int64_t j = std::min<int64_t>(k, kTile) / 2; j > 0; j /= 2) {
      const int64_t i = pair_low(threadIdx.x, j);
      order_pair(tile[i], tile[i + j], ((base + i) & k) == 0);
      __syncthreads();
    }
  }
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) keys[base + i] = tile[i];
}

// One stride j >= kTile of stage k over all keys.
__global__ void bitonic_global_kernel(uint64_t* keys, int64_t pairs, int64_t j, int64_t k) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= pairs) return;
  const int64_t i = pair_low(t, j);
  uint64_t a = keys[i], b = keys[i + j];
  order_pair(a, b, (i & k) == 0);
  keys[i] = a;
  keys[i + j] = b;
}

// The id of sorted key s, or -1 for no key (outside [0, tokens), padding, a bad id).
__device__ __forceinline__ int64_t key_id(const uint64_t* keys, int64_t s, int64_t tokens) {
  return s >= 0 && s < tokens && keys[s] != kNoKey ? static_cast<int64_t>(keys[s] >> 32) : -1;
}

// One warp per (segment q of kRunSegment sorted keys, column chunk): each run of equal ids in the
// segment is summed in key order; a run wholly inside the segment goes to dword, the piece of a
// longer run into head[q] (it continues a run from the previous segment) or tail[q] (it starts a
// run that goes on past the segment).
template <class T, int V>
__global__ void word_grad_segment_kernel(const uint64_t* keys, const T* dout, float* dword,
                                         float* head, float* tail, int64_t tokens, int64_t segments,
                                         int64_t e) {
  const int64_t q = blockIdx.x * static_cast<int64_t>(kTokensPerBlock) + threadIdx.x / kWarpSize;
  const int64_t c = (blockIdx.y * static_cast<int64_t>(kWarpSize) + threadIdx.x % kWarpSize) * V;
  if (q >= segments || c >= e) return;
  const int64_t begin = q * kRunSegment, end = std::min(tokens, begin + kRunSegment);
  float acc[V], d[V];
  for (int64_t a = begin; a < end;) {
    const int64_t id = key_id(keys, a, tokens);
    if (id < 0) break;  // no-key entries sort last
    for (int j = 0; j < V; ++j) acc[j] = 0.0f;
    int64_t b = a;
    for (; b < end && key_id(keys, b, tokens) == id; ++b) {
      load_vec<V>(dout + static_cast<int64_t>(keys[b] & 0xffffffffu) * e + c, d);
      for (int j = 0; j < V; ++j) acc[j] += d[j];
    }
    const bool from_before = a == begin && key_id(keys, a - 1, tokens) == id;
    const bool goes_on = b == end && key_id(keys, b, tokens) == id;
    float* dst = from_before ? head + q * e + c : goes_on ? tail + q * e + c : dword + id * e + c;
    for (int j = 0; j < V; ++j) dst[j] = from_before || goes_on ? acc[j] : dst[j] + acc[j];
    a = b;
  }
}

// One warp per (segment q, column chunk) whose last run starts in q and goes on past it:
// dword[id] += tail[q] + head[q + 1] + head[q + 2] + ... over the segments the run covers.
template <int V>
__global__ void word_grad_join_kernel(const uint64_t* keys, float* dword, const float* head,
                                      const float* tail, int64_t tokens, int64_t segments,
                                      int64_t e) {
  const int64_t q = blockIdx.x * static_cast<int64_t>(kTokensPerBlock) + threadIdx.x / kWarpSize;
  const int64_t c = (blockIdx.y * static_cast<int64_t>(kWarpSize) + threadIdx.x % kWarpSize) * V;
  if (q >= segments || c >= e) return;
  const int64_t begin = q * kRunSegment, end = std::min(tokens, begin + kRunSegment);
  const int64_t id = key_id(keys, end - 1, tokens);
  if (id < 0 || key_id(keys, end, tokens) != id) return;  // the last run ends in q
  // The last run starts inside q unless the whole segment continues a run from before.
  if (key_id(keys, begin, tokens) == id && key_id(keys, begin - 1, tokens) == id) return;
  float acc[V], d[V];
  load_vec<V>(tail + q * e + c, acc);
  for (int64_t r = q + 1; r < segments && key_id(keys, r * kRunSegment, tokens) == id; ++r) {
    load_vec<V>(head + r * e + c, d);
    for (int j = 0; j < V; ++j) acc[j] += d[j];
  }
  float* row = dword + id * e + c;
  for (int j = 0; j < V; ++j) row[j] += acc[j];
}

// One thread per (position t, column): dposition[t] += sum_b dout[b, t]; partial[t, s] = sum of
// dout[b, t] over b with segment s.
template <class T>
__global__ void position_segment_kernel(const T* dout, const int32_t* segment_ids, float* dposition,
                                        float* partial, int64_t batch, int64_t len, int64_t e,
                                        int64_t segments) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t t = blockIdx.y;
  if (c >= e) return;
  float pos = 0, seg[kEmbeddingMaxSegments] = {};
  for (int64_t b = 0; b < batch; ++b) {
    const float v = to_float(dout[(b * len + t) * e + c]);
    const int32_t sid = segment_ids[b * len + t];
    pos += v;
    for (int s = 0; s < kEmbeddingMaxSegments; ++s) {
      if (s == sid) seg[s] += v;
    }
  }
  dposition[t * e + c] += pos;
  for (int s = 0; s < segments; ++s) partial[(t * segments + s) * e + c] = seg[s];
}

__global__ void segment_finish_kernel(const float* partial, float* dsegment, int64_t len, int64_t e,
                                      int64_t segments) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;  // s * e + c
  if (i >= segments * e) return;
  float sum = 0;
  for (int64_t t = 0; t < len; ++t) sum += partial[t * segments * e + i];
  dsegment[i] += sum;
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

// Sorts the (id, token) keys of the batch into workspace keys[0, padded).
void sort_keys(Context& ctx, const Tensor& ids, int64_t vocab, uint64_t* keys, int64_t padded) {
  const int64_t tokens = ids.numel();
  make_keys_kernel<<<ceil_div(padded, kColumnThreads), kColumnThreads, 0, ctx.stream()>>>(
      ids.ptr<int32_t>(), keys, tokens, padded, vocab);
  ELECTRA_CUDA_CHECK_LAUNCH();
  const unsigned tiles = static_cast<unsigned>(padded / kTile);
  bitonic_tile_kernel<<<tiles, kTileThreads, 0, ctx.stream()>>>(keys, 0);
  ELECTRA_CUDA_CHECK_LAUNCH();
  for (int64_t k = 2 * kTile; k <= padded; k *= 2) {
    for (int64_t j = k / 2; j >= kTile; j /= 2) {
      bitonic_global_kernel<<<ceil_div(padded / 2, kColumnThreads), kColumnThreads, 0,
                              ctx.stream()>>>(keys, padded / 2, j, k);
      ELECTRA_CUDA_CHECK_LAUNCH();
    }
    bitonic_tile_kernel<<<tiles, kTileThreads, 0, ctx.stream()>>>(keys, k);
    ELECTRA_CUDA_CHECK_LAUNCH();
  }
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
  ELECTRA_CHECK(tokens < (int64_t{1} << 32), "embedding_backward (cuda): too many tokens ", tokens);
  const size_t need = embedding_backward_workspace_bytes(batch, len, segments, e);
  ELECTRA_CHECK(workspace.device == Device::CUDA && workspace.nbytes() >= need &&
                    is_aligned16(workspace.data),
                "embedding_backward (cuda): workspace ", workspace.str(), " must be on cuda, ",
                "16-byte aligned, with at least ", need, " bytes");
  const int64_t padded = static_cast<int64_t>(embedding_sort_keys(batch, len));
  const int64_t run_segments = ceil_div(tokens, kRunSegment);
  uint64_t* keys = static_cast<uint64_t*>(workspace.data);
  float* partial = reinterpret_cast<float*>(keys + padded);
  float* head = partial + len * segments * e;
  float* tail = head + run_segments * e;
  const T* d = static_cast<const T*>(dout.data);

  sort_keys(ctx, ids, dword.dim(0), keys, padded);
  const bool vec = vectorizable(e, {d, dword.data, head, tail});
  const int v = vec ? 8 : 1;
  const dim3 grid(static_cast<unsigned>(ceil_div(run_segments, kTokensPerBlock)),
                  static_cast<unsigned>(ceil_div(e, kWarpSize * v)));
  const int threads = kTokensPerBlock * kWarpSize;
  if (vec) {
    word_grad_segment_kernel<T, 8><<<grid, threads, 0, ctx.stream()>>>(
        keys, d, dword.ptr<float>(), head, tail, tokens, run_segments, e);
    ELECTRA_CUDA_CHECK_LAUNCH();
    word_grad_join_kernel<8><<<grid, threads, 0, ctx.stream()>>>(keys, dword.ptr<float>(), head,
                                                                 tail, tokens, run_segments, e);
  } else {
    word_grad_segment_kernel<T, 1><<<grid, threads, 0, ctx.stream()>>>(
        keys, d, dword.ptr<float>(), head, tail, tokens, run_segments, e);
    ELECTRA_CUDA_CHECK_LAUNCH();
    word_grad_join_kernel<1><<<grid, threads, 0, ctx.stream()>>>(keys, dword.ptr<float>(), head,
                                                                 tail, tokens, run_segments, e);
  }
  ELECTRA_CUDA_CHECK_LAUNCH();

  const dim3 pos_grid(static_cast<unsigned>(ceil_div(e, kColumnThreads)),
                      static_cast<unsigned>(len));
  position_segment_kernel<T><<<pos_grid, kColumnThreads, 0, ctx.stream()>>>(
      d, segment_ids.ptr<int32_t>(), dposition.ptr<float>(), partial, batch, len, e, segments);
  ELECTRA_CUDA_CHECK_LAUNCH();
  segment_finish_kernel<<<ceil_div(segments * e, kColumnThreads), kColumnThreads, 0,
                          ctx.stream()>>>(partial, dsegment.ptr<float>(), len, e, segments);
  ELECTRA_CUDA_CHECK_LAUNCH();
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
