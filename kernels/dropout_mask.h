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

}  // namespace electra
