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
// FMA contraction; the host compiles with -ffp-contract=off): t = n + f with n = floor(t) and f in
// [0, 1], 2^f by a degree-5 polynomial, 2^n by a right shift of the fixed-point mantissa. Accuracy:
// the f32 coefficients fit 2^f within 8.7e-8 relative (evaluated with 30 digits on a 1e-5 grid of
// [0, 1]); Horner's 5 multiplications and 5 additions of positive terms add at most 10 roundings
// of 2^-24; f = t - n is exact for |t| >= 1/2 and within 2^-25 of it otherwise (2.1e-8 relative in
// 2^f). So w_j = floor(2^(31 + t) (1 + e)) with |e| < 8.7e-8 + 10 * 2^-24 + 2.1e-8 < 2^-20 (checked
// by softmax_xent_test). Columns whose weight floors to 0, i.e. exp((x_j - max) / T) below
// about 2^-31 = 4.7e-10, are never drawn; t is clamped to [-63, 0], so -inf and NaN logits weigh 0.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/hd.h"
#include "engine/philox.h"

namespace electra {

// c = log2(e) / T rounded once to f32, on the host (the kernel receives it as an argument).
inline float sample_exp2_scale(float temperature) {
  return static_cast<float>(1.4426950408889634 / static_cast<double>(temperature));
}

// w = floor(2^31 * 2^t), t = (x - max) * c clamped to [-63, 0] (NaN: -63, weight 0).
ELECTRA_HD uint64_t sample_weight(float x, float max, float c) {
  // 2^f ~ 1 + f (k1 + f (k2 + f (k3 + f (k4 + f k5)))) on [0, 1], relative minimax (Lawson).
  constexpr float k1 = 0x1.62e4bap-1f, k2 = 0x1.ebdb58p-3f, k3 = 0x1.c91ce4p-5f,
                  k4 = 0x1.277866p-7f, k5 = 0x1.e974bap-10f;
  const float t = fminf(fmaxf(mul_rn(add_rn(x, -max), c), -63.0f), 0.0f);
  const float n = floorf(t);
  const float f = add_rn(t, -n);
  float p = add_rn(mul_rn(k5, f), k4);
  p = add_rn(mul_rn(p, f), k3);
  p = add_rn(mul_rn(p, f), k2);
  p = add_rn(mul_rn(p, f), k1);
  p = add_rn(mul_rn(p, f), 1.0f);
  // p in [1, 2]: times 2^31 is exact, the conversion truncates, and a right shift by -n floors
  // again (floor(floor(a) / 2^s) = floor(a / 2^s)); -n <= 63.
  return static_cast<uint64_t>(mul_rn(p, 0x1.0p31f)) >> static_cast<int>(-n);
}

// floor(total * r / 2^32) for total < 2^63, in 64-bit pieces: total = hi 2^32 + lo gives
// hi r + floor(lo r / 2^32) exactly. Below total for any r.
ELECTRA_HD uint64_t sample_target(uint64_t total, uint32_t r) {
  return (total >> 32) * r + (((total & 0xFFFFFFFFu) * r) >> 32);
}

// The draw on the host (the CUDA kernel's search is its parallel form): the weights of x[0, v)
// (read as f32) summed once for the total, then again up to the first prefix above the target.
// Returns that column, or -1 when no column weighs anything (no finite logit).
template <class T>
int64_t sample_column(const T* x, int64_t v, float exp2_scale, uint32_t r) {
  float max = -INFINITY;
  for (int64_t j = 0; j < v; ++j) max = std::fmax(max, static_cast<float>(x[j]));
  uint64_t total = 0;
  for (int64_t j = 0; j < v; ++j) total += sample_weight(static_cast<float>(x[j]), max, exp2_scale);
  if (total == 0) return -1;
  const uint64_t target = sample_target(total, r);
  uint64_t prefix = 0;
  for (int64_t j = 0;; ++j) {  // ends by j = v - 1, where prefix = total > target
    prefix += sample_weight(static_cast<float>(x[j]), max, exp2_scale);
    if (prefix > target) return j;
  }
}

}  // namespace electra
