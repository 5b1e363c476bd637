// The dropout masks, shared by every op that drops. Element `index` of a dropout site survives
// with probability 1 - p, and a survivor is scaled by 1 / (1 - p):
// - dropout and the fused residual + LayerNorm (dropout_keep): when uniform01(bits(index)) >= p,
//   a 24-bit uniform, one Philox call per 4 elements;
// - the attention probabilities (attention_keep): when the element's 16-bit uniform is >= p, two a
//   Philox word (the low half first), one Philox call per 8 elements. Attention draws T^2 bits a
//   head, and the draws were its forward's largest cost besides the products (kernels/
//   attention.h); 16 bits give p to 2^-16 (p = 0.1 drops with probability 6554 / 65536 =
//   0.100006), the scale stays 1 / (1 - p).
// Neither mask is stored by these ops (the backward regenerates it from (stream, index)); the
// bf16 flash attention saves the bits its forward drew (kernels/attention.h's `keep`).
//
// Sites are kept apart by the index: site s of a step uses indices [s << 40, (s + 1) << 40), so a
// site may hold up to 2^40 elements; the caller chooses s (e.g. 2 * layer for the hidden dropout
// and 2 * layer + 1 for the attention dropout).
#pragma once

#include <cmath>
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

// The attention mask's threshold: its 16-bit uniform u * 2^-16 >= p <=> u >= ceil(p 2^16) (p 2^16
// is exact in float). 65536 for p > 1 - 2^-16: nothing is kept, as the comparison says.
ELECTRA_HD uint32_t attention_keep_threshold(float p) {
  return static_cast<uint32_t>(ceilf(p * 65536.0f));
}

// The attention mask's 16-bit uniforms: element k of site s is half k % 2 (the low half first) of
// word (s << 40) + k / 2 of the stream, so that a site's halves stay inside its own words (no two
// sites share a word). As an index into the stream's halves (half h: half h % 2 of word h / 2),
// element `index` = (s << 40) + k is half index + (s << 40), which fits 64 bits for s < 2^23
// (dropout_pass.h's sites are below 2^17).
ELECTRA_HD uint64_t philox_half_index(uint64_t index) {
  return index + (index >> kDropoutSiteShift << kDropoutSiteShift);
}

// Half h % 2 of a Philox word (the low half first): the 16-bit uniform of stream half h, where
// `word` is word h / 2.
ELECTRA_HD uint32_t half_of(uint32_t word, uint64_t h) {
  return (word >> (16 * (h & 1))) & 0xFFFFu;
}

// The 16-bit uniform of element `index` (times 2^-16).
ELECTRA_HD uint32_t philox_half(const RngStream& stream, uint64_t index) {
  const uint64_t h = philox_half_index(index);
  return half_of(stream.bits(h >> 1), h);
}

ELECTRA_HD bool attention_keep(const RngStream& stream, uint64_t index, float p) {
  return philox_half(stream, index) >= attention_keep_threshold(p);
}

// Bit k (k < 8) set <=> half k of Philox block `block` (half k % 2 of word k / 2) >= threshold.
ELECTRA_HD uint32_t keep_bits_of_block(const U32x4& block, uint32_t threshold) {
  uint32_t bits = 0;
  ELECTRA_HD_UNROLL
  for (int k = 0; k < 8; ++k) {
    bits |= static_cast<uint32_t>(half_of(block.v[k / 2], k) >= threshold) << k;
  }
  return bits;
}

// Bit k (k < N) set <=> attention_keep(stream, first + k, p), threshold =
// attention_keep_threshold(p): the keep mask of N = 4 or 8 consecutive elements from one Philox
// block. `first` is a multiple of N (attention_mask_index's rows start at multiples of 8).
template <int N>
ELECTRA_HD uint32_t attention_keep_bits(const RngStream& stream, uint64_t first,
                                        uint32_t threshold) {
  static_assert(N == 4 || N == 8, "4 or 8 elements");
  const uint64_t h = philox_half_index(first);
  const uint32_t bits = keep_bits_of_block(stream.block(h >> 3), threshold);
  return N == 8 ? bits : bits >> (h & 4) & 0xFu;
}

// Element (query i, key j) of head bh of a T x T attention mask at site offset `site`: rows are
// round_up(T, 8) elements apart, so that every group of 8 keys starting at a multiple of 8 is
// one Philox block, for every T (no group straddles two blocks; a row's last group draws a few
// halves it does not use).
ELECTRA_HD uint64_t attention_mask_pitch(int64_t t) {
  return static_cast<uint64_t>((t + 7) / 8 * 8);
}
ELECTRA_HD uint64_t attention_mask_index(uint64_t site, int64_t bh, int64_t t, int64_t i,
                                         int64_t j) {
  return site + static_cast<uint64_t>(bh * t + i) * attention_mask_pitch(t) +
         static_cast<uint64_t>(j);
}

}  // namespace electra
