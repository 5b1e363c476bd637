// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), one
// implementation for host and device. A random number is a pure function of
// (seed, purpose, step, rank, element index), so masking, dropout and sampling are the same on
// CPU and GPU, for any launch shape, and after a resume.
//
// Layout: key = seed (64 bits); counter = {block lo32, block hi32, step lo32,
// purpose << 24 | rank (24 bits)}, where block = element / 4 and one Philox call yields the four
// 32-bit words of elements 4*block .. 4*block+3.
//
// Floats derived from the bits use only correctly rounded IEEE operations with explicit rounding
// on the device (no FMA contraction) and -ffp-contract=off on the host, so they are bit-identical
// on both sides.
#pragma once

#include <cstdint>

#include "engine/bf16.h"
#include "engine/hd.h"

namespace electra {

struct U32x4 {
  uint32_t v[4];
};

// What a stream of random numbers is for; part of the counter so streams never overlap.
enum class RngPurpose : uint32_t {
  kTest = 0,
  kMasking = 1,
  kDropout = 2,
  kSample = 3,  // the generator's samples (softmax_xent, unigram_sample)
  kDataOrder = 4,
  kInit = 5,
  kBuilder = 6,
};

ELECTRA_HD void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Philox4x32's round multipliers and Weyl key increments (Random123).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

// The raw Philox4x32 bijection with 10 rounds (Random123's philox4x32_R(10, ctr, key)).
ELECTRA_HD U32x4 philox4x32_10(U32x4 ctr, uint32_t key0, uint32_t key1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kPhiloxW0;
      key1 += kPhiloxW1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(kPhiloxM0, ctr.v[0], hi0, lo0);
    mulhilo32(kPhiloxM1, ctr.v[2], hi1, lo1);
    ctr = U32x4{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
  }
  return ctr;
}

// A keyed stream: (seed, purpose, step, rank). Element i of the stream is word i % 4 of block i
// / 4.
//
// The step is a value, or lives in memory of the op's device (`step_at`: the pre-training step's
// micro-step counter, written by a kernel, so that a replayed CUDA graph draws fresh numbers on
// every update). An op reads it once through resolved() (each CUDA thread at its start, a CPU op
// at its entry) and uses the resolved stream: block() and bits() read `step` only.
struct RngStream {
  uint64_t seed = 0;
  RngPurpose purpose = RngPurpose::kTest;
  uint32_t step = 0;
  uint32_t rank = 0;                  // < 2^24
  const uint32_t* step_at = nullptr;  // when set, the step is *step_at

  // This stream with the step read from step_at (a plain copy when step_at is unset).
  ELECTRA_HD RngStream resolved() const {
    return step_at == nullptr ? *this : RngStream{seed, purpose, *step_at, rank, nullptr};
  }

  // The counter's last word: purpose << 24 | rank.
  ELECTRA_HD uint32_t tag() const {
    return (static_cast<uint32_t>(purpose) << 24) | (rank & 0xFFFFFFu);
  }
  ELECTRA_HD U32x4 block(uint64_t block_index) const {
    const U32x4 ctr{{static_cast<uint32_t>(block_index), static_cast<uint32_t>(block_index >> 32),
                     step, tag()}};
    return philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  }
  ELECTRA_HD uint32_t bits(uint64_t element) const { return block(element >> 2).v[element & 3]; }
};

// Exactly rounded float ops that nvcc may not contract into FMAs.
ELECTRA_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
ELECTRA_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
ELECTRA_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// Uniform in [0, 1): the top 24 bits times 2^-24 (exact).
ELECTRA_HD float uniform01(uint32_t bits) {
  return static_cast<float>(bits >> 8) * 0x1.0p-24f;
}

// Uniform in (0, 1): (top 23 bits + 0.5) * 2^-23, exact in float, from 2^-24 to 1 - 2^-24: never 0
// or 1, safe inside log. (With 24 bits, 2^24 - 0.5 would round up to 2^24 and give 1.)
ELECTRA_HD float uniform_open01(uint32_t bits) {
  return (static_cast<float>(bits >> 9) + 0.5f) * 0x1.0p-23f;
}

// Uniform integer in [0, n) by 64-bit multiply-shift (Lemire); bias < n / 2^32.
ELECTRA_HD uint32_t uniform_below(uint32_t bits, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(bits) * n) >> 32);
}

}  // namespace electra
