#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/philox.h"
#include "engine/philox_bulk.h"

using namespace electra;

// Random123's kat_vectors for philox4x32_10: counter[4], key[2] -> output[4].
TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors", "[philox]") {
  struct Kat {
    U32x4 ctr;
    uint32_t key0, key1;
    U32x4 expected;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& kat : kats) {
    const U32x4 out = philox4x32_10(kat.ctr, kat.key0, kat.key1);
    for (int i = 0; i < 4; ++i) CHECK(out.v[i] == kat.expected.v[i]);
  }
}

TEST_CASE("RngStream element i is word i%4 of block i/4, and streams are separated", "[philox]") {
  const RngStream s{0x0123456789abcdefull, RngPurpose::kMasking, 5, 1};
  const U32x4 b = s.block(1ull << 33);
  for (int j = 0; j < 4; ++j) CHECK(s.bits((1ull << 35) + j) == b.v[j]);
  // The seed is the key, step/purpose/rank are in the counter.
  CHECK(b.v[0] == philox4x32_10(U32x4{{0, 2, 5, (1u << 24) | 1u}}, 0x89abcdef, 0x01234567).v[0]);
  RngStream other = s;
  other.purpose = RngPurpose::kDropout;
  CHECK(other.bits(0) != s.bits(0));
  other = s;
  other.rank = 2;
  CHECK(other.bits(0) != s.bits(0));
  other = s;
  other.step = 6;
  CHECK(other.bits(0) != s.bits(0));
}

TEST_CASE("Uniform floats stay in range and are exact multiples of 2^-24", "[philox]") {
  CHECK(uniform01(0) == 0.0f);
  CHECK(uniform01(0xffffffffu) == 1.0f - 0x1.0p-24f);
  CHECK(uniform_open01(0) == 0x1.0p-24f);
  CHECK(uniform_open01(0xffffffffu) == 1.0f - 0x1.0p-24f);
  const RngStream s{7, RngPurpose::kTest, 0, 0};
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) sum += uniform01(s.bits(i));
  CHECK(sum / n == Approx(0.5).margin(0.005));
  for (uint32_t n_bins : {1u, 7u, 30522u}) {
    for (int i = 0; i < 1000; ++i) CHECK(uniform_below(s.bits(i), n_bins) < n_bins);
  }
}

TEST_CASE("philox_fill equals RngStream::bits for any start and length", "[philox]") {
  const RngStream s{0xfeedface12345678ull, RngPurpose::kDropout, 9, 3};
  std::vector<uint32_t> out(300);
  for (uint64_t first : {0ull, 1ull, 2ull, 3ull, 5ull, (1ull << 40) + 7, (1ull << 34) - 2}) {
    for (int64_t n : {0, 1, 3, 4, 63, 64, 65, 131, 300}) {
      std::fill(out.begin(), out.end(), 0xdeadbeefu);
      philox_fill(s, first, n, out.data());
      for (int64_t i = 0; i < n; ++i) {
        INFO("first " << first << " n " << n << " i " << i);
        REQUIRE(out[i] == s.bits(first + static_cast<uint64_t>(i)));
      }
      for (int64_t i = n; i < 300; ++i) REQUIRE(out[i] == 0xdeadbeefu);
    }
  }
}
