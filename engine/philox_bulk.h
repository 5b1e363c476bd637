// Many consecutive words of a Philox stream at once, on the host. The same values as
// RngStream::bits(first + i); the rounds run over kLanes blocks side by side, one 32-bit counter
// word of every block per SIMD register (GCC/clang vector extensions, the target's width), so
// that dropout masks on the CPU cost a fraction of one block at a time.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/philox.h"

namespace electra {

namespace philox_detail {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX2__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif

// One counter word of kLanes blocks; the same register as kLanes / 2 64-bit lanes.
using Words = uint32_t __attribute__((vector_size(4 * kLanes)));
using Wide = uint64_t __attribute__((vector_size(4 * kLanes)));

// Per 64-bit lane: the low 32 bits of x times those of y, a full 64-bit product (vpmuludq). The
// AVX-512 form keeps all 8 lanes through the zero-masked intrinsic, which compiles to the same
// instruction without GCC 12's false -Wuninitialized on _mm512_mul_epu32's pass-through operand.
inline Wide mul_low32(Wide x, Wide y) {
#if defined(__AVX512F__)
  return reinterpret_cast<Wide>(
      _mm512_maskz_mul_epu32(0xFF, reinterpret_cast<__m512i>(x), reinterpret_cast<__m512i>(y)));
#elif defined(__AVX2__)
  return reinterpret_cast<Wide>(
      _mm256_mul_epu32(reinterpret_cast<__m256i>(x), reinterpret_cast<__m256i>(y)));
#else
  return reinterpret_cast<Wide>(
      _mm_mul_epu32(reinterpret_cast<__m128i>(x), reinterpret_cast<__m128i>(y)));
#endif
}

// hi:lo = m * a per lane (mulhilo32 of philox.h): the even lanes' products, then the odd ones'.
inline void mulhilo(uint32_t m, Words a, Words& hi, Words& lo) {
  const Wide mv = static_cast<uint64_t>(m) - Wide{};
  const Wide w = reinterpret_cast<Wide>(a);
  const Wide even = mul_low32(w, mv), odd = mul_low32(w >> 32, mv);
  constexpr uint64_t kLow = 0xFFFFFFFFu;
  lo = reinterpret_cast<Words>((even & kLow) | (odd << 32));
  hi = reinterpret_cast<Words>((even >> 32) | (odd & ~kLow));
}

// Blocks [block0, block0 + kLanes) of the stream, written as 4 * kLanes consecutive words.
inline void blocks_simd(const RngStream& s, uint64_t block0, uint32_t* out) {
  Words c0, c1;
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t b = block0 + static_cast<uint64_t>(l);
    c0[l] = static_cast<uint32_t>(b);
    c1[l] = static_cast<uint32_t>(b >> 32);
  }
  Words c2 = s.step - Words{}, c3 = s.tag() - Words{};
  uint32_t key0 = static_cast<uint32_t>(s.seed), key1 = static_cast<uint32_t>(s.seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kPhiloxW0;
      key1 += kPhiloxW1;
    }
    Words hi0, lo0, hi1, lo1;
    mulhilo(kPhiloxM0, c0, hi0, lo0);
    mulhilo(kPhiloxM1, c2, hi1, lo1);
    c0 = hi1 ^ c1 ^ key0;
    c2 = hi0 ^ c3 ^ key1;
    c1 = lo1;
    c3 = lo0;
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
