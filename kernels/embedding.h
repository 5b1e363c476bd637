// embedding: BERT's input block up to the projection: the sum of the three embedding tables, the
// embedding LayerNorm and its dropout, in one op (one GPU launch); the backward is the lookup
// gradient (the LayerNorm's and the dropout's backward are layernorm_backward with its dy_dropout).
//
// Forward:  sum[b, t, :] = word[ids[b, t], :] + position[t, :] + segment[segment_ids[b, t], :]
//           (added in that order), then y = dropout(layernorm(sum)) with norm's gamma, beta, eps
//           and dropout site (flat index (b T + t) E + j), saving sum, mean and rstd for the
//           LayerNorm backward (kernels/layernorm.h: the formulas; kernels/dropout.h: the mask).
//           The CPU runs the three steps of those ops in order (the same bits as the three ops).
//           The GPU forms the sum in f32, stores it rounded to the activation dtype and normalises
//           the stored value (as layernorm_forward reads it back), and rounds y once.
// Backward: dword[v, :]     += sum over (b, t) with ids[b, t] == v of dout[b, t, :]
//           dposition[t, :] += sum over b of dout[b, t, :]
//           dsegment[s, :]  += sum over (b, t) with segment_ids[b, t] == s of dout[b, t, :]
//           (parameter gradients: accumulated, +=); dout is the gradient of `sum`.
// Shapes: ids, segment_ids i32 [B, T]; word [V, E], position [P, E] with T <= P, segment [S, E];
// sum, y, dout [B, T, E]; gamma, beta [E]; mean, rstd [B, T]; dword, dposition, dsegment like
// their tables.
// Dtypes: CPU all f32 or all f64; GPU tables, gamma, beta, statistics and the table gradients f32,
// sum, y and dout f32 or bf16.
// Out-of-range ids (id < 0 or id >= V, segment id < 0 or >= S): the CPU throws UserError naming
// the position (b, t) and the value. The GPU cannot throw from a kernel: the forward writes a
// row of NaN for such a token (never reading outside the tables), so the error shows up in the
// loss, and the backward skips that token for the table whose id is out of range.
// GPU backward, deterministic (same bits every run, whatever the launch), without float atomics.
// The forward, given the workspace, also sorts the 32-bit keys (id << s | token) of each sort tile
// of kEmbeddingSortTileKeys tokens in one block beside its row blocks (a stable radix sort in
// shared memory, so each id's tokens stay in ascending order): the sort depends on the ids only.
// The backward is then one launch per sort tile: dword summed per run of equal ids in token order
// (runs cut into segments of kEmbeddingRunSegment sorted keys; a run crossing segments is joined,
// its pieces in segment order, by whichever warp adds the last piece), and, in the first tile's
// launch, dposition summed over b in order and per-position dsegment partials, which the block
// arriving last adds over t in order. Above one tile, dword[v] is dword[v] + (tile 0's sum) +
// (tile 1's sum) ...: still a fixed order. The keys must fit 32 bits: bit_width(V) +
// bit_width(tile tokens - 1) <= 32 (V < 131072 with full tiles), else the GPU forward (with a
// workspace) and backward throw Error.
// Workspace (GPU only; the CPU ignores it): a tensor of any dtype of at least
// embedding_backward_workspace_bytes(B, T, S, E) bytes, 16-byte aligned. The backward's must be
// the one a forward with the same ids filled (the sorted keys); a forward without one (inference:
// no backward follows) skips the sort.
#pragma once

#include <cstddef>

#include "kernels/dispatch.h"
#include "kernels/layernorm.h"

namespace electra {

// Most segment types the GPU backward supports (BERT and ELECTRA use 2).
constexpr int64_t kEmbeddingMaxSegments = 8;

// Most keys one block sorts in shared memory: 128 KiB of keys (plus about 2 KiB of counters)
// fits the 163 KiB a block may opt in to on sm_80 and the 227 KiB on sm_90. ELECTRA-Small's
// 128 x 128 and Base's 64 x 512 tokens are one tile.
constexpr int64_t kEmbeddingSortTileKeys = 32768;

// Sorted keys per segment of the GPU word-gradient pass (a long run of one id is cut into pieces
// of at most this many tokens, summed by separate warps). Divides kEmbeddingSortTileKeys, so a
// segment never spans two tiles.
constexpr int64_t kEmbeddingRunSegment = 64;

// The GPU backward's workspace, each region 16-byte aligned, in bytes from its start: the sorted
// keys (u32 per token); T * S * E f32 per-position partial sums of dsegment; two E-float pieces
// (head, tail) per segment of kEmbeddingRunSegment sorted keys; per segment the first and the
// last segment of the runs at its two ends (i32 each); a u32 arrival counter per (segment, chunk
// of 32 columns).
struct EmbeddingWorkspace {
  size_t keys = 0, partial = 0, head = 0, tail = 0, first = 0, last = 0, counters = 0, bytes = 0;
};
inline EmbeddingWorkspace embedding_workspace(int64_t b, int64_t t, int64_t s, int64_t e) {
  const auto tokens = static_cast<size_t>(b * t);
  const size_t segments = (tokens + kEmbeddingRunSegment - 1) / kEmbeddingRunSegment;
  const size_t chunks = (static_cast<size_t>(e) + 31) / 32;
  auto region = [](size_t& at, size_t bytes) {
    const size_t start = at;
    at += (bytes + 15) / 16 * 16;
    return start;
  };
  EmbeddingWorkspace w;
  size_t at = 0;
  w.keys = region(at, tokens * 4);
  w.partial = region(at, static_cast<size_t>(t * s * e) * 4);
  w.head = region(at, segments * static_cast<size_t>(e) * 4);
  w.tail = region(at, segments * static_cast<size_t>(e) * 4);
  w.first = region(at, segments * 4);
  w.last = region(at, segments * 4);
  w.counters = region(at, segments * chunks * 4);
  w.bytes = at;
  return w;
}
inline size_t embedding_backward_workspace_bytes(int64_t b, int64_t t, int64_t s, int64_t e) {
  return embedding_workspace(b, t, s, e).bytes;
}

// Shapes and id dtypes (tables [*, E], ids [B, T], out [B, T, E], T <= P).
inline void check_embedding_shapes(const char* op, const Tensor& ids, const Tensor& segment_ids,
                                   const Tensor& word, const Tensor& position,
                                   const Tensor& segment, const Tensor& out) {
  check_dtype(ids, DType::I32, op);
  check_dtype(segment_ids, DType::I32, op);
  ELECTRA_CHECK(ids.rank == 2, op, ": ids must be [B, T], got ", ids.str());
  check_same_shape(ids, segment_ids, op);
  ELECTRA_CHECK(word.rank == 2 && position.rank == 2 && segment.rank == 2, op,
                ": tables must be [rows, E], got word ", word.str(), ", position ", position.str(),
                ", segment ", segment.str());
  const int64_t e = word.dim(1);
  ELECTRA_CHECK(position.dim(1) == e && segment.dim(1) == e, op, ": table widths differ: word ",
                word.str(), ", position ", position.str(), ", segment ", segment.str());
  ELECTRA_CHECK(ids.dim(1) <= position.dim(0), op, ": sequence length ", ids.dim(1),
                " exceeds the position table ", position.str());
  check_shape(out, {ids.dim(0), ids.dim(1), e}, op);
  check_float_dtypes(op, {out}, {word, position, segment});
}

// The forward's LayerNorm of the sum and its dropout.
struct EmbeddingNorm {
  In gamma, beta;
  float eps = 0;
  DropoutSite site = {};  // p = 0 (the default): no dropout
};

struct EmbeddingForward {
  static constexpr const char* kName = "embedding_forward";
  In ids, segment_ids, word, position, segment;
  EmbeddingNorm norm;
  Out sum, y, mean, rstd;
  Out workspace = Out(Tensor{});  // optional: the backward's sorted keys (GPU)

  void check() const {
    check_embedding_shapes(kName, ids, segment_ids, word, position, segment, sum);
    check_same_shape(sum, y, kName);
    check_shape(norm.gamma, {word.dim(1)}, kName);
    check_shape(norm.beta, {word.dim(1)}, kName);
    check_shape(mean, {ids.dim(0), ids.dim(1)}, kName);
    check_shape(rstd, {ids.dim(0), ids.dim(1)}, kName);
    check_float_dtypes(kName, {sum, y}, {norm.gamma, norm.beta, mean, rstd});
    check_layernorm_eps(norm.eps, kName);
    check_dropout_p(norm.site.p, kName);
  }
  // embedding.cu: one kernel, its first blocks sorting (with a workspace), the others a row each
  // warp.
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct EmbeddingBackward {
  static constexpr const char* kName = "embedding_backward";
  In dout, ids, segment_ids;
  Out dword, dposition, dsegment, workspace;

  void check() const {
    check_embedding_shapes(kName, ids, segment_ids, dword, dposition, dsegment, dout);
  }
  // embedding.cu: per sort tile the word-gradient pass (the first with the position and
  // segment sums); the forward sorted the keys.
  Launches launches() const {
    if (ids.numel() == 0 || dword.dim(1) == 0) return {};
    return {.kernels = (ids.numel() + kEmbeddingSortTileKeys - 1) / kEmbeddingSortTileKeys};
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
