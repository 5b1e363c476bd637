// Vec: one SIMD register of f32 lanes for the CPU kernels (AVX-512, AVX2 + FMA, or one float,
// whichever the build targets). Every operation is the IEEE one, correctly rounded per lane, so a
// lane gives the bits of the same scalar expression (fma: std::fma): a loop's vector body and its
// scalar tail agree, and -ffp-contract=off is kept (nothing is fused unless fma is written).
#pragma once

#include <immintrin.h>

#include <cmath>

namespace electra::cpu {

#if defined(__AVX512F__)
struct Vec {
  static constexpr int kLanes = 16;
  __m512 v;
  static Vec zero() { return {_mm512_setzero_ps()}; }
  static Vec load(const float* p) { return {_mm512_loadu_ps(p)}; }
  static Vec broadcast(float x) { return {_mm512_set1_ps(x)}; }
  void store(float* p) const { _mm512_storeu_ps(p, v); }
  Vec operator+(Vec o) const { return {_mm512_add_ps(v, o.v)}; }
  Vec operator-(Vec o) const { return {_mm512_sub_ps(v, o.v)}; }
  Vec operator*(Vec o) const { return {_mm512_mul_ps(v, o.v)}; }
  Vec operator/(Vec o) const { return {_mm512_div_ps(v, o.v)}; }
  static Vec sqrt(Vec a) { return {_mm512_sqrt_ps(a.v)}; }
  static Vec fma(Vec a, Vec b, Vec c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Vec {
  static constexpr int kLanes = 8;
  __m256 v;
  static Vec zero() { return {_mm256_setzero_ps()}; }
  static Vec load(const float* p) { return {_mm256_loadu_ps(p)}; }
  static Vec broadcast(float x) { return {_mm256_set1_ps(x)}; }
  void store(float* p) const { _mm256_storeu_ps(p, v); }
  Vec operator+(Vec o) const { return {_mm256_add_ps(v, o.v)}; }
  Vec operator-(Vec o) const { return {_mm256_sub_ps(v, o.v)}; }
  Vec operator*(Vec o) const { return {_mm256_mul_ps(v, o.v)}; }
  Vec operator/(Vec o) const { return {_mm256_div_ps(v, o.v)}; }
  static Vec sqrt(Vec a) { return {_mm256_sqrt_ps(a.v)}; }
  static Vec fma(Vec a, Vec b, Vec c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
};
#else
struct Vec {
  static constexpr int kLanes = 1;
  float v;
  static Vec zero() { return {0.0f}; }
  static Vec load(const float* p) { return {*p}; }
  static Vec broadcast(float x) { return {x}; }
  void store(float* p) const { *p = v; }
  Vec operator+(Vec o) const { return {v + o.v}; }
  Vec operator-(Vec o) const { return {v - o.v}; }
  Vec operator*(Vec o) const { return {v * o.v}; }
  Vec operator/(Vec o) const { return {v / o.v}; }
  static Vec sqrt(Vec a) { return {std::sqrt(a.v)}; }
  static Vec fma(Vec a, Vec b, Vec c) { return {std::fma(a.v, b.v, c.v)}; }
};
#endif

}  // namespace electra::cpu
