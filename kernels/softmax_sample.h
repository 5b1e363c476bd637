// The sample of softmax_xent (kernels/softmax_xent.h): inverse-CDF sampling of softmax(x / T) over
// integer weights, one implementation for the CPU reference and the CUDA kernel.
//
// Column j of a row gets the fixed-point weight
//   w_j = floor(2^31 * 2^t_j),  t_j = (x_j - max) * c,  c = float(log2(e) / T),
// so w_j / 2^31 = exp((x_j - max) / T) and the row's maximum weighs exactly 2^31. The weights are
// integers, so their sums are exact in any order: a GPU's parallel prefix sum and the CPU's serial
// one reach the same totals, and both sides pick the same column from the same Philox word.
// One row draws one 32-bit word r and takes the smallest k with w_0 + ... + w_k > target,
// target = floor(W r / 2^32), W = sum_j w_j. Over the 2^32 values of r, column k is drawn
// ceil(C_k 2^32 / W) - ceil(C_{k-1} 2^32 / W) times (C_k = w_0 + ... + w_k), i.e. with probability
// w_k / W within 2^-32.
//
// 2^t is computed from float operations that are exactly rounded on both sides (mul_rn/add_rn, no
// FMA contraction; the host compiles with -ffp-contract=off) and integer operations, with no
// conversion instruction (16 a clock per SM on sm_80 and sm_90 by the CUDA programming guide's
// throughput table, against 64 or 128 float operations): t = n + f with n the nearest integer to
// t, read from the low bits of t + 1.5 * 2^23, and f in [-1/2, 1/2] exact; 2^f by a degree-5
// polynomial; 2^n by shifting the polynomial's 24-bit significand. Accuracy: the f32 coefficients
// fit 2^f within 1.1e-7 relative (evaluated with 30 digits on a 5e-5 grid of [-1/2, 1/2]), and
// Horner's roundings add at most 4 * 2^-24 (with |f| <= 1/2 each step's error reaches the result
// at most halved; the last two steps, on values of 0.7 to 1.42, dominate), so
// w_j = floor(2^(31 + t) (1 + e)) with |e| < 1.1e-7 + 4 * 2^-24 < 2^-20 (checked by
// softmax_xent_test). t is clamped to [-32, 0]; below -31 a weight floors to 0 (to within e), so
// columns whose exp((x_j - max) / T) is below 2^-31 = 4.7e-10 are never drawn, and -inf and NaN
// logits weigh 0.
#pragma once

#include <cstdint>

#include "engine/bf16.h"
#include "engine/hd.h"
#include "engine/philox.h"

namespace electra {

// c = log2(e) / T rounded once to f32, on the host (the kernel receives it as an argument).
inline float sample_exp2_scale(float temperature) {
  return static_cast<float>(1.4426950408889634 / static_cast<double>(temperature));
}

// The constants of sample_weight, shared with its SIMD form on the host
// (kernels/softmax_sample_cpu.h).
struct SampleExp2 {
  // 2^f ~ 1 + f (k1 + f (k2 + f (k3 + f (k4 + f k5)))) on [-1/2, 1/2], relative minimax (Lawson).
  static constexpr float k1 = 0x1.62e42ap-1f, k2 = 0x1.ebf9bcp-3f, k3 = 0x1.c6b752p-5f,
                         k4 = 0x1.3cea80p-7f, k5 = 0x1.5bb9f4p-10f;
  // t + 1.5 * 2^23 lies in [2^23, 2^24), where the float spacing is 1: it rounds t to the nearest
  // integer n and holds 1.5 * 2^23 + n exactly, so n is the difference of the bit patterns.
  static constexpr float kRound = 0x1.8p23f;
};

// w = floor(2^31 * 2^t), t = (x - max) * c clamped to [-32, 0] (NaN: -32, weight 0).
ELECTRA_HD uint64_t sample_weight(float x, float max, float c) {
  using K = SampleExp2;
  // The clamp as selects: a NaN fails the first comparison (weight 0), and no libm call on the
  // host.
  float t = mul_rn(add_rn(x, -max), c);
  t = t > -32.0f ? t : -32.0f;
  t = t < 0.0f ? t : 0.0f;
  const float shifted = add_rn(t, K::kRound);
  const int n = static_cast<int>(float_bits(shifted) - float_bits(K::kRound));  // in [-32, 0]
  const float f = add_rn(t, -add_rn(shifted, -K::kRound));  // t - n: exact (Sterbenz)
  float p = add_rn(mul_rn(K::k5, f), K::k4);
  p = add_rn(mul_rn(p, f), K::k3);
  p = add_rn(mul_rn(p, f), K::k2);
  p = add_rn(mul_rn(p, f), K::k1);
  p = add_rn(mul_rn(p, f), 1.0f);
  // p in [0.7, 1.42] is m 2^(e - 150), m its 24-bit significand and e its biased exponent (126 or
  // 127), so 2^31 2^n p = m 2^(e - 119 + n): m 2^32 shifted right by 151 - e - n, in [24, 57].
  const uint32_t bits = float_bits(p);
  const uint64_t m = (bits & 0x7FFFFFu) | 0x800000u;
  return (m << 32) >> (151 - static_cast<int>(bits >> 23) - n);
}

// floor(total * r / 2^32) for total < 2^63, in 64-bit pieces: total = hi 2^32 + lo gives
// hi r + floor(lo r / 2^32) exactly. Below total for any r.
ELECTRA_HD uint64_t sample_target(uint64_t total, uint32_t r) {
  return (total >> 32) * r + (((total & 0xFFFFFFFFu) * r) >> 32);
}

}  // namespace electra
