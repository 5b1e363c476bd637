// The dropout mask, shared by every op that drops (dropout, fused residual+LayerNorm, attention
// probabilities): element `index` of a dropout site survives when uniform01(bits) >= p, and a
// survivor is scaled by 1 / (1 - p). The mask is never stored: the backward regenerates it from
// (stream, index), which costs one Philox call per 4 elements instead of a byte per element.
//
// Sites are kept apart by the index: site s of a step uses indices [s << 40, (s + 1) << 40), so a
// site may hold up to 2^40 elements; the caller chooses s (e.g. 2 * layer for the hidden dropout
// and 2 * layer + 1 for the attention dropout).
#pragma once

#include <cstdint>

#include "engine/hd.h"
#include "engine/philox.h"

namespace electra {

constexpr int kDropoutSiteShift = 40;

ELECTRA_HD uint64_t dropout_site_offset(uint32_t site) {
  return static_cast<uint64_t>(site) << kDropoutSiteShift;
}

ELECTRA_HD bool dropout_keep(const RngStream& stream, uint64_t index, float p) {
  return uniform01(stream.bits(index)) >= p;
}

// Words first .. first + 3 of the stream (v[k] == stream.bits(first + k)) for any alignment of
// `first`: one Philox block when first % 4 == 0, else the two blocks it straddles. The words are
// picked by constant indices under a branch on the offset, never by a runtime array index, so on
// the device they stay in registers (a dynamically indexed U32x4 spills to local memory).
ELECTRA_HD U32x4 philox_words4(const RngStream& stream, uint64_t first) {
  const U32x4 a = stream.block(first >> 2);
  const uint32_t offset = static_cast<uint32_t>(first & 3);
  if (offset == 0) return a;
  const U32x4 b = stream.block((first >> 2) + 1);
  if (offset == 1) return U32x4{{a.v[1], a.v[2], a.v[3], b.v[0]}};
  if (offset == 2) return U32x4{{a.v[2], a.v[3], b.v[0], b.v[1]}};
  return U32x4{{a.v[3], b.v[0], b.v[1], b.v[2]}};
}

// Bit k (k < 4) set <=> dropout_keep(stream, first + k, p): the keep mask of 4 consecutive
// elements from one (or, unaligned, two) Philox blocks instead of four.
ELECTRA_HD uint32_t dropout_keep4(const RngStream& stream, uint64_t first, float p) {
  const U32x4 w = philox_words4(stream, first);
  return static_cast<uint32_t>(uniform01(w.v[0]) >= p) |
         static_cast<uint32_t>(uniform01(w.v[1]) >= p) << 1 |
         static_cast<uint32_t>(uniform01(w.v[2]) >= p) << 2 |
         static_cast<uint32_t>(uniform01(w.v[3]) >= p) << 3;
}

}  // namespace electra
