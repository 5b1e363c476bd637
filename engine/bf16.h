// bfloat16 storage type shared by host and device: the upper 16 bits of an IEEE float.
// Conversion from float rounds to nearest, ties to even (what __float2bfloat16_rn does), and keeps
// NaN a quiet NaN; conversion to float is exact.
#pragma once

#include <cstdint>
#include <cstring>

#include "engine/hd.h"

namespace electra {

struct bf16 {
  uint16_t bits;
};

ELECTRA_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

ELECTRA_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

ELECTRA_HD bf16 float_to_bf16(float x) {
  uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<uint16_t>(u >> 16)};
}

ELECTRA_HD float bf16_to_float(bf16 x) {
  return bits_float(static_cast<uint32_t>(x.bits) << 16);
}

}  // namespace electra
