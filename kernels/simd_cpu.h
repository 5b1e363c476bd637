// Vec: one SIMD register of f32 lanes for the CPU kernels (AVX-512, AVX2 + FMA, or one float,
// whichever the build targets). Every operation is the IEEE one, correctly rounded per lane, so a
// lane gives the bits of the same scalar expression (fma: std::fma): a loop's vector body and its
// scalar tail agree, and -ffp-contract=off is kept (nothing is fused unless fma is written).
//
// + - * / are the compiler's vector extensions (GCC and clang: one instruction of the target's
// width each); only fma and sqrt name the instruction of each ISA.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace electra::cpu {

#if defined(__AVX512F__)
constexpr int kVecLanes = 16;
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kVecLanes = 8;
#else
constexpr int kVecLanes = 1;
#endif

struct Vec {
  static constexpr int kLanes = kVecLanes;
  using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
  Lanes v;

  static Vec zero() { return {Lanes{}}; }
  static Vec load(const float* p) {
    Vec r;
    std::memcpy(&r.v, p, sizeof(Lanes));
    return r;
  }
  // x - 0 is x in every lane, -0 and NaN included (x + 0 would turn -0 into +0).
  static Vec broadcast(float x) { return {x - Lanes{}}; }
  void store(float* p) const { std::memcpy(p, &v, sizeof(Lanes)); }
  Vec operator+(Vec o) const { return {v + o.v}; }
  Vec operator-(Vec o) const { return {v - o.v}; }
  Vec operator*(Vec o) const { return {v * o.v}; }
  Vec operator/(Vec o) const { return {v / o.v}; }
  static Vec sqrt(Vec a);
  static Vec fma(Vec a, Vec b, Vec c);
};

#if defined(__AVX512F__)
inline Vec Vec::sqrt(Vec a) {
  return {_mm512_sqrt_ps(a.v)};
}
inline Vec Vec::fma(Vec a, Vec b, Vec c) {
  return {_mm512_fmadd_ps(a.v, b.v, c.v)};
}
#elif defined(__AVX2__) && defined(__FMA__)
inline Vec Vec::sqrt(Vec a) {
  return {_mm256_sqrt_ps(a.v)};
}
inline Vec Vec::fma(Vec a, Vec b, Vec c) {
  return {_mm256_fmadd_ps(a.v, b.v, c.v)};
}
#else
inline Vec Vec::sqrt(Vec a) {
  return {Vec::Lanes{std::sqrt(a.v[0])}};
}
inline Vec Vec::fma(Vec a, Vec b, Vec c) {
  return {Vec::Lanes{std::fma(a.v[0], b.v[0], c.v[0])}};
}
#endif

}  // namespace electra::cpu
