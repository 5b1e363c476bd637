// Many consecutive words of a Philox stream at once, on the host. The same values as
// RngStream::bits(first + i); the rounds run over kLanes blocks side by side in plain arrays so
// that the compiler turns them into SIMD code (AVX-512: 8 or 16 lanes), which makes dropout masks
// and Gumbel noise on the CPU several times cheaper than one block at a time.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/philox.h"

namespace electra {

namespace philox_detail {

constexpr int kLanes = 16;

// Blocks [block0, block0 + kLanes) of the stream, written as 4 * kLanes consecutive words.
inline void blocks_simd(const RngStream& s, uint64_t block0, uint32_t* out) {
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  const uint32_t step = s.step, tag = s.tag();
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t b = block0 + static_cast<uint64_t>(l);
    c0[l] = static_cast<uint32_t>(b);
    c1[l] = static_cast<uint32_t>(b >> 32);
    c2[l] = step;
    c3[l] = tag;
  }
  uint32_t key0 = static_cast<uint32_t>(s.seed), key1 = static_cast<uint32_t>(s.seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kPhiloxW0;
      key1 += kPhiloxW1;
    }
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c0[l];
      const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c2[l];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ key0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ key1;
      c1[l] = static_cast<uint32_t>(p1);
      c3[l] = static_cast<uint32_t>(p0);
      c0[l] = n0;
      c2[l] = n2;
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    out[4 * l] = c0[l];
    out[4 * l + 1] = c1[l];
    out[4 * l + 2] = c2[l];
    out[4 * l + 3] = c3[l];
  }
}

}  // namespace philox_detail

// out[i] = s.bits(first + i) for i < n.
inline void philox_fill(const RngStream& s, uint64_t first, int64_t n, uint32_t* out) {
  constexpr int64_t kWords = 4 * philox_detail::kLanes;
  int64_t i = 0;
  // Head: up to the first block boundary, then whole groups of kLanes blocks, then the tail.
  while (i < n && ((first + static_cast<uint64_t>(i)) & 3) != 0) {
    out[i] = s.bits(first + static_cast<uint64_t>(i));
    ++i;
  }
  for (; i + kWords <= n; i += kWords) {
    philox_detail::blocks_simd(s, (first + static_cast<uint64_t>(i)) >> 2, out + i);
  }
  if (i < n) {
    uint32_t last[kWords];
    philox_detail::blocks_simd(s, (first + static_cast<uint64_t>(i)) >> 2, last);
    std::copy(last, last + (n - i), out + i);
  }
}

}  // namespace electra
