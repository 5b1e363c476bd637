// The sample of kernels/softmax_sample.h on the host: the row's max and the weights of 16 columns
// at a time in SIMD registers (GCC/clang vector extensions, split to the target's width), each
// lane running sample_weight's operations in its order (-ffp-contract=off: no contraction), so
// every weight has sample_weight's bits (softmax_xent_test compares them); then the draw. A scalar
// loop over sample_weight does not vectorise (GCC turns its clamp into branches), and the draw
// evaluates one and a half weights per column.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/softmax_sample.h"

namespace electra::cpu {

namespace sample_detail {

constexpr int kLanes = 16;
using Floats = float __attribute__((vector_size(4 * kLanes)));
using Ints = int32_t __attribute__((vector_size(4 * kLanes)));
using Words = uint32_t __attribute__((vector_size(4 * kLanes)));
using Wide = uint64_t __attribute__((vector_size(8 * kLanes)));

inline Floats splat(float v) {
  return Floats{} + v;
}

// sample_weight of each lane of x, written to out[0, kLanes).
inline void weights_simd(Floats x, float max, float c, uint64_t* out) {
  using K = SampleExp2;
  Floats t = (x + (-max)) * c;
  t = t > -32.0f ? t : splat(-32.0f);
  t = t < 0.0f ? t : splat(0.0f);
  const Floats shifted = t + K::kRound;
  const Ints n = reinterpret_cast<Ints>(reinterpret_cast<Words>(shifted) -
                                        reinterpret_cast<Words>(splat(K::kRound)));
  const Floats f = t + (-(shifted + (-K::kRound)));
  Floats p = K::k5 * f + K::k4;
  p = p * f + K::k3;
  p = p * f + K::k2;
  p = p * f + K::k1;
  p = p * f + 1.0f;
  const Words bits = reinterpret_cast<Words>(p);
  const Wide m = __builtin_convertvector((bits & 0x7FFFFFu) | 0x800000u, Wide);
  const Wide shift = __builtin_convertvector(
      reinterpret_cast<Words>(151 - reinterpret_cast<Ints>(bits >> 23) - n), Wide);
  const Wide w = (m << 32) >> shift;
  std::memcpy(out, &w, sizeof(w));
}

// kLanes values of x as floats (doubles rounded to nearest, as static_cast<float>).
using Doubles = double __attribute__((vector_size(8 * kLanes)));
inline Floats load_floats(const float* x) {
  Floats v;
  std::memcpy(&v, x, sizeof(v));
  return v;
}
inline Floats load_floats(const double* x) {
  Doubles v;
  std::memcpy(&v, x, sizeof(v));
  return __builtin_convertvector(v, Floats);
}

// The largest non-NaN float(x[j]) of x[0, n), -inf if none: `v > m ? v : m` per lane skips NaN.
// Which of -0 and +0 it returns when both occur does not matter: x - max and the clamp give t = 0
// for either.
template <class T>
float max_of(const T* x, int64_t n) {
  Floats lanes = splat(-INFINITY);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const Floats v = load_floats(x + j);
    lanes = v > lanes ? v : lanes;
  }
  float max = -INFINITY;
  for (int k = 0; k < kLanes; ++k) max = lanes[k] > max ? lanes[k] : max;
  for (; j < n; ++j) {
    const float v = static_cast<float>(x[j]);
    max = v > max ? v : max;
  }
  return max;
}

}  // namespace sample_detail

// out[j] = sample_weight(float(x[j]), max, c) for j < n.
template <class T>
void sample_weights(const T* x, int64_t n, float max, float c, uint64_t* out) {
  using namespace sample_detail;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) weights_simd(load_floats(x + j), max, c, out + j);
  if (j < n) {
    T tail[kLanes] = {};
    std::copy(x + j, x + n, tail);
    uint64_t w[kLanes];
    weights_simd(load_floats(tail), max, c, w);
    std::copy(w, w + (n - j), out + j);
  }
}

// The draw of kernels/softmax_sample.h over x[0, v) (read as f32; the CUDA kernel's search is its
// parallel form): the weights of 1024 columns at a time, summed for the total, then again chunk by
// chunk up to the chunk that holds the target and through it column by column. Returns that
// column, or -1 when no column weighs anything (no finite logit).
template <class T>
int64_t sample_column(const T* x, int64_t v, float exp2_scale, uint32_t r) {
  constexpr int64_t kChunk = 1024;
  const float max = sample_detail::max_of(x, v);
  uint64_t w[kChunk];
  auto chunk_total = [&](int64_t c, int64_t len) {
    sample_weights(x + c, len, max, exp2_scale, w);
    uint64_t sum = 0;
    for (int64_t j = 0; j < len; ++j) sum += w[j];
    return sum;
  };
  uint64_t total = 0;
  for (int64_t c = 0; c < v; c += kChunk) total += chunk_total(c, std::min(kChunk, v - c));
  if (total == 0) return -1;
  const uint64_t target = sample_target(total, r);
  uint64_t prefix = 0;
  for (int64_t c = 0;; c += kChunk) {  // ends by the last chunk, where prefix reaches total
    const int64_t len = std::min(kChunk, v - c);
    const uint64_t sum = chunk_total(c, len);
    if (prefix + sum <= target) {
      prefix += sum;
      continue;
    }
    for (int64_t j = 0;; ++j) {
      prefix += w[j];
      if (prefix > target) return c + j;
    }
  }
}

}  // namespace electra::cpu
