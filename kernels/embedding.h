// embedding: the sum of BERT's three embedding tables (before the embedding LayerNorm).
//
// Forward:  out[b, t, :] = word[ids[b, t], :] + position[t, :] + segment[segment_ids[b, t], :]
//           (added in that order).
// Backward: dword[v, :]     += sum over (b, t) with ids[b, t] == v of dout[b, t, :]
//           dposition[t, :] += sum over b of dout[b, t, :]
//           dsegment[s, :]  += sum over (b, t) with segment_ids[b, t] == s of dout[b, t, :]
//           (parameter gradients: accumulated, +=).
// Shapes: ids, segment_ids i32 [B, T]; word [V, E], position [P, E] with T <= P, segment [S, E];
// out, dout [B, T, E]; dword, dposition, dsegment like their tables.
// Dtypes: CPU tables and out all f32 or all f64; GPU tables and their gradients f32, out and dout
// f32 or bf16 (the sum is formed in f32 and rounded once).
// Out-of-range ids (id < 0 or id >= V, segment id < 0 or >= S): the CPU throws UserError naming
// the position (b, t) and the value. The GPU cannot throw from a kernel: the forward writes a
// row of NaN for such a token (never reading outside the tables), so the error shows up in the
// loss, and the backward skips that token for the table whose id is out of range.
// GPU backward is deterministic (same bits every run, whatever the launch): dword sorts the
// (id, token index) pairs (bitonic sort of 64-bit keys) and one warp per (run of equal ids,
// column chunk) sums the run in token order; dposition sums over b in order; dsegment (S <= 8 on
// the GPU) sums per position t, then over t in order. No float atomics.
// Workspace (GPU backward only; the CPU ignores it): a tensor of any dtype of at least
// embedding_backward_workspace_bytes(B, T, S, E) bytes, 16-byte aligned.
#pragma once

#include <cstddef>

#include "kernels/dispatch.h"

namespace electra {

// Most segment types the GPU backward supports (BERT and ELECTRA use 2).
constexpr int64_t kEmbeddingMaxSegments = 8;

// Sorted keys per segment of the GPU word-gradient pass (a long run of one id is cut into pieces
// of at most this many tokens, summed by separate warps).
constexpr int64_t kEmbeddingRunSegment = 64;

// Sort keys: B * T rounded up to a power of two (and at least the 2048 keys of one sort tile),
// 8 bytes each; then T * S * E f32 per-position partial sums of dsegment; then two E-float pieces
// (head, tail) per segment of kEmbeddingRunSegment sorted keys.
inline size_t embedding_sort_keys(int64_t b, int64_t t) {
  size_t n = 2048;
  while (n < static_cast<size_t>(b * t)) n *= 2;
  return n;
}
inline size_t embedding_backward_workspace_bytes(int64_t b, int64_t t, int64_t s, int64_t e) {
  const int64_t run_segments = (b * t + kEmbeddingRunSegment - 1) / kEmbeddingRunSegment;
  return embedding_sort_keys(b, t) * 8 + static_cast<size_t>(t * s * e) * 4 +
         static_cast<size_t>(2 * run_segments * e) * 4;
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
}

struct EmbeddingForward {
  static constexpr const char* kName = "embedding_forward";
  In ids, segment_ids, word, position, segment;
  Out out;

  void check() const {
    check_embedding_shapes(kName, ids, segment_ids, word, position, segment, out);
  }
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
  // embedding.cu: the bitonic sort of the (id, token) keys (one kernel making the keys, one
  // sorting each tile of embedding_sort_keys(1, 1) keys, then per merge size k = 2 tiles ..
  // padded one global pass per stride j = k / 2 .. tile and one in-tile pass), the word-gradient
  // segment and join kernels, the position and segment partials and the segment sums.
  Launches launches() const {
    if (ids.numel() == 0 || dword.dim(1) == 0) return {};
    const auto tile = static_cast<int64_t>(embedding_sort_keys(1, 1));
    const auto padded = static_cast<int64_t>(embedding_sort_keys(ids.dim(0), ids.dim(1)));
    int64_t sort = 2;
    for (int64_t k = 2 * tile; k <= padded; k *= 2) {
      for (int64_t j = k / 2; j >= tile; j /= 2) ++sort;
      ++sort;
    }
    return {.kernels = sort + 4};
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
