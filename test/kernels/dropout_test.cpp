// dropout on the CPU: keep fraction, survivor scaling, identity at p = 0, the regenerated mask of
// the backward, site separation and argument errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "kernels/dropout.h"
#include "kernels/dropout_mask_cpu.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("dropout keeps a binomial fraction and scales survivors by exactly 1 / (1 - p)",
          "[dropout]") {
  Context ctx = Context::cpu(5);
  const int64_t n = 100000;
  for (float p : {0.1f, 0.5f}) {
    const DropoutSite site{ctx.rng(RngPurpose::kDropout, 2), dropout_site_offset(3), p};
    std::vector<float> x = test::random_vector<float>(n, 1, -2, 2, true), y(n);
    run_op(ctx, Dropout{.x = test::view(x), .site = site, .y = Out(test::view(y))});
    const float scale = 1.0f / (1.0f - p);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (y[i] != 0.0f) {
        ++kept;
        REQUIRE(y[i] == x[i] * scale);
      }
    }
    // Binomial(n, 1 - p): within 5 standard deviations of its mean.
    const double mean = n * (1.0 - p), sd = std::sqrt(n * p * (1.0 - p));
    CHECK(std::abs(kept - mean) < 5 * sd);
  }
}

TEST_CASE("dropout with p = 0 is the identity", "[dropout]") {
  Context ctx = Context::cpu();
  std::vector<float> x = test::random_vector<float>(1001, 2), y(1001);
  run_op(ctx, Dropout{.x = test::view(x),
                      .site = DropoutSite{ctx.rng(RngPurpose::kDropout, 0), 0, 0.0f},
                      .y = Out(test::view(y))});
  CHECK(y == x);
}

TEST_CASE("dropout backward regenerates the forward mask; sites and steps differ", "[dropout]") {
  Context ctx = Context::cpu(11);
  const int64_t n = 4099;
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 7), dropout_site_offset(1), 0.25f};
  std::vector<float> x = test::random_vector<float>(n, 3, -1, 1, true), y(n), dx(n);
  std::vector<float> dy = test::random_vector<float>(n, 4, -1, 1, true);
  run_op(ctx, Dropout{.x = test::view(x), .site = site, .y = Out(test::view(y))});
  run_op(ctx, Dropout{.x = test::view(dy), .site = site, .y = Out(test::view(dx))});
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE((y[i] == 0.0f) == (dx[i] == 0.0f));
    if (dx[i] != 0.0f) REQUIRE(dx[i] == dy[i] * (1.0f / 0.75f));
  }
  DropoutSite other_site = site, other_step = site;
  other_site.offset = dropout_site_offset(2);
  other_step.stream.step = 8;
  for (const DropoutSite& s : {other_site, other_step}) {
    std::vector<float> z(n);
    run_op(ctx, Dropout{.x = test::view(x), .site = s, .y = Out(test::view(z))});
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) differ += (z[i] == 0.0f) != (y[i] == 0.0f);
    CHECK(differ > n / 10);
  }
}

// One tensor in a wrong shape or dtype: dropout_contract_test; integer x and y together (the
// f32-or-f64 rule, which no single retyped tensor reaches) stay here.
TEST_CASE("dropout refuses p outside 0 <= p < 1 and integer tensors", "[dropout]") {
  Context ctx = Context::cpu();
  std::vector<float> x(8, 1.0f), y(8);
  const RngStream stream = ctx.rng(RngPurpose::kDropout, 0);
  CHECK_THROWS_WITH(run_op(ctx, Dropout{.x = test::view(x),
                                        .site = DropoutSite{stream, 0, 1.0f},
                                        .y = Out(test::view(y))}),
                    Catch::Contains("[0, 1)"));
  CHECK_THROWS_AS(run_op(ctx, Dropout{.x = test::view(x),
                                      .site = DropoutSite{stream, 0, -0.1f},
                                      .y = Out(test::view(y))}),
                  Error);
  std::vector<int32_t> ints(8);
  const Tensor t = test::view(ints, {8});
  CHECK_THROWS_WITH(run_op(ctx, Dropout{.x = t, .site = DropoutSite{stream, 0, 0.1f}, .y = Out(t)}),
                    Catch::Contains("f32 or f64"));
}

TEST_CASE("the CPU mask is dropout_keep element by element, from any offset", "[dropout]") {
  const RngStream stream{0x5eed, RngPurpose::kDropout, 4, 0};
  for (float p : {0.1f, 0.5f, 1.0f / 3.0f, 0x1.0p-24f, 0.0f, 1.0f}) {
    CHECK(cpu::dropout_keep_threshold(p) == static_cast<uint32_t>(std::ceil(p * 0x1.0p24)));
    for (uint32_t bits : {0u, 0xffu, 0x100u, 0x19999a00u, 0x1999999au, 0xffffffffu}) {
      CHECK(((bits >> 8) >= cpu::dropout_keep_threshold(p)) == (uniform01(bits) >= p));
    }
    for (uint64_t first : {uint64_t{0}, uint64_t{3}, dropout_site_offset(5) + 1}) {
      const int64_t n = 2500;  // crosses the 1024-element chunks at an unaligned start
      std::vector<double> x(n, 2.0), y(n, -1.0);
      cpu::apply_dropout_mask(stream, first, p, x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = dropout_keep(stream, first + static_cast<uint64_t>(i), p);
        INFO("p " << p << " first " << first << " i " << i);
        REQUIRE(y[i] == (keep ? 2.0 / (1.0 - static_cast<double>(p)) : 0.0));
      }
    }
  }
}

TEST_CASE("philox_words4 and dropout_keep4 equal bits and dropout_keep at every alignment",
          "[dropout]") {
  const RngStream stream{99, RngPurpose::kDropout, 3, 1};
  // Offsets 0..3 of a block, near a site boundary and past 32-bit element indices.
  for (uint64_t base : {uint64_t{0}, dropout_site_offset(5) - 4, (uint64_t{1} << 34) + 8}) {
    for (uint64_t first = base; first < base + 12; ++first) {
      const U32x4 w = philox_words4(stream, first);
      for (int k = 0; k < 4; ++k) CHECK(w.v[k] == stream.bits(first + k));
      for (float p : {0.1f, 0.5f, 0.9f}) {
        const uint32_t keep = dropout_keep4(stream, first, p);
        for (int k = 0; k < 4; ++k) {
          CHECK(((keep >> k) & 1u) == static_cast<uint32_t>(dropout_keep(stream, first + k, p)));
        }
        CHECK(keep < 16u);
      }
    }
  }
}

// The attention mask (dropout_mask.h's attention_keep): 16-bit uniforms, two a Philox word.
TEST_CASE("attention_keep: the halves of the site's own words, compared with ceil(p 2^16)",
          "[dropout][attention]") {
  for (float p : {0.1f, 0.5f, 1.0f / 3.0f, 0x1.0p-16f, 0x1.0p-17f, 0.0f, 1.0f - 0x1.0p-24f}) {
    INFO("p " << p);
    const uint32_t threshold = attention_keep_threshold(p);
    CHECK(threshold == static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 65536.0)));
    for (uint32_t u : {0u, 1u, 6553u, 6554u, 32767u, 32768u, 65535u}) {
      CHECK((u >= threshold) == (u * 0x1.0p-16 >= static_cast<double>(p)));
    }
  }
  CHECK(attention_keep_threshold(0.1f) == 6554u);
  const RngStream stream{0x5eed, RngPurpose::kDropout, 7, 2};
  // Element k of site s: half k % 2 of word (s << 40) + k / 2, the low half first.
  for (uint32_t s : {0u, 1u, 5u, 131071u}) {
    for (uint64_t k :
         {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{77}, (uint64_t{1} << 40) - 1}) {
      INFO("site " << s << " element " << k);
      const uint64_t index = dropout_site_offset(s) + k;
      const uint32_t word = stream.bits(dropout_site_offset(s) + k / 2);
      CHECK(philox_half(stream, index) == (k % 2 == 0 ? word & 0xFFFFu : word >> 16));
    }
  }
  // So two sites never share a word: site s's last element is in a word below site s + 1's first.
  CHECK(philox_half_index(dropout_site_offset(6) - 1) / 2 < dropout_site_offset(6));
}

TEST_CASE("attention_keep_bits<4> and <8> equal attention_keep at their alignments",
          "[dropout][attention]") {
  const RngStream stream{99, RngPurpose::kDropout, 3, 1};
  // Both halves of a block for 4, whole blocks for 8: at a site's start and end and past 32-bit
  // element indices.
  for (uint64_t base :
       {uint64_t{0}, dropout_site_offset(6) - 32, dropout_site_offset(3) + (uint64_t{1} << 34)}) {
    for (uint64_t first = base; first < base + 32; first += 4) {
      for (float p : {0.1f, 0.5f, 0.9f}) {
        INFO("first " << first << " p " << p);
        const uint32_t threshold = attention_keep_threshold(p);
        const uint32_t four = attention_keep_bits<4>(stream, first, threshold);
        CHECK(four < 16u);
        for (int k = 0; k < 4; ++k) {
          CHECK(((four >> k) & 1u) == static_cast<uint32_t>(attention_keep(stream, first + k, p)));
        }
        if (first % 8 != 0) continue;
        const uint32_t eight = attention_keep_bits<8>(stream, first, threshold);
        CHECK(eight < 256u);
        for (int k = 0; k < 8; ++k) {
          CHECK(((eight >> k) & 1u) == static_cast<uint32_t>(attention_keep(stream, first + k, p)));
        }
      }
    }
  }
}

TEST_CASE("attention_mask_index: one index an element, rows starting on a Philox block",
          "[dropout][attention]") {
  const uint64_t site = dropout_site_offset(9);
  for (int64_t t : {1, 7, 8, 37, 129}) {
    INFO("T = " << t);
    std::set<uint64_t> seen;
    for (int64_t bh = 0; bh < 3; ++bh) {
      for (int64_t i = 0; i < t; ++i) {
        // Every group of 8 keys starting at a multiple of 8 is one block's halves.
        CHECK(philox_half_index(attention_mask_index(site, bh, t, i, 0)) % 8 == 0);
        for (int64_t j = 0; j < t; ++j) {
          const uint64_t index = attention_mask_index(site, bh, t, i, j);
          CHECK(index >= site);
          CHECK(index < dropout_site_offset(10));
          CHECK(seen.insert(index).second);
        }
      }
    }
  }
}

TEST_CASE("the CPU attention mask is attention_keep element by element, a binomial fraction",
          "[dropout][attention]") {
  const RngStream stream{0x5eed, RngPurpose::kDropout, 4, 0};
  for (float p : {0.1f, 0.5f, 0.0f}) {
    for (uint64_t first : {uint64_t{0}, uint64_t{3}, dropout_site_offset(5) + 1}) {
      const int64_t n = 5000;  // crosses the 2048-element chunks at an odd start
      std::vector<double> x(n, 2.0), y(n, -1.0);
      cpu::apply_attention_dropout_mask(stream, first, p, x.data(), y.data(), n);
      int64_t kept = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = attention_keep(stream, first + static_cast<uint64_t>(i), p);
        INFO("p " << p << " first " << first << " i " << i);
        REQUIRE(y[i] == (keep ? 2.0 / (1.0 - static_cast<double>(p)) : 0.0));
        kept += keep;
      }
      // Binomial(n, 1 - p') with p' = ceil(p 2^16) / 2^16: within 5 standard deviations.
      const double q = 1.0 - std::ceil(static_cast<double>(p) * 65536.0) / 65536.0;
      CHECK(std::abs(static_cast<double>(kept) - n * q) <=
            5.0 * std::sqrt(n * q * (1.0 - q)) + 1e-9);
    }
  }
}
