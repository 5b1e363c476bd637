// dropout on the CPU: keep fraction, survivor scaling, identity at p = 0, the regenerated mask of
// the backward, site separation and argument errors.
#include <catch2/catch.hpp>
#include <cmath>

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
