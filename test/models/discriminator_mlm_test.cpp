// The Appendix G rule (models/discriminator_mlm.h) on hand-made numbers.
#include <catch2/catch.hpp>

#include "models/discriminator_mlm.h"

using namespace electra;

TEST_CASE("Appendix G: prior ratio and score by hand", "[discriminator_mlm]") {
  // p_mask 0.15: a = 0.85 / 0.15 = 17/3.
  CHECK(appendix_g_prior_ratio(0.15) == Approx(17.0 / 3.0).epsilon(1e-12));
  CHECK(appendix_g_prior_ratio(0.5) == 1.0);
  // a = 1, D = 0.5, pG = 0.5: 0.25 / (0.5 + 0.5) = 0.25.
  CHECK(appendix_g_score(0.5, 0.5, 1.0) == Approx(0.25).epsilon(1e-15));
  // a = 2, D = 0.9, pG = 0.1: 0.09 / (0.2 + 0.1) = 0.3.
  CHECK(appendix_g_score(0.9, 0.1, 2.0) == Approx(0.3).epsilon(1e-15));
  // A discriminator sure of "original" (D = 1) leaves pG's own weight: pG / pG = 1.
  CHECK(appendix_g_score(1.0, 0.2, 5.0) == Approx(1.0).epsilon(1e-15));
  // D = 0: never the original.
  CHECK(appendix_g_score(0.0, 0.7, 5.0) == 0.0);
  CHECK(appendix_g_score(1.0, 0.0, 5.0) == 0.0);  // 0 / 0 counts 0
}

TEST_CASE("Appendix G: the discriminator overrules the generator's ranking",
          "[discriminator_mlm]") {
  const double a = 17.0 / 3.0;  // p_mask 0.15
  // The generator prefers candidate 0 (0.6 vs 0.3 vs 0.1); the discriminator says 0 was a
  // replacement (D 0.1) and 1 the original (D 0.95).
  //   score 0 = 0.06  / (a 0.9  + 0.6) = 0.06  / 5.7     = 0.010526...
  //   score 1 = 0.285 / (a 0.05 + 0.3) = 0.285 / 0.58333 = 0.488571...
  //   score 2 = 0.05  / (a 0.5  + 0.1) = 0.05  / 2.93333 = 0.017045...
  const double d[] = {0.1, 0.95, 0.5};
  const double p[] = {0.6, 0.3, 0.1};
  CHECK(appendix_g_score(d[0], p[0], a) == Approx(0.06 / 5.7).epsilon(1e-12));
  CHECK(appendix_g_score(d[1], p[1], a) == Approx(0.285 / (0.85 / 3 + 0.3)).epsilon(1e-12));
  CHECK(appendix_g_pick(d, p, 3, a) == 1);
  // With an undecided discriminator (D = 0.5 everywhere) the score grows with pG: the generator's
  // argmax is kept.
  const double half[] = {0.5, 0.5, 0.5};
  CHECK(appendix_g_pick(half, p, 3, a) == 0);
  // Ties keep the first candidate; a single candidate is picked.
  const double same_p[] = {0.3, 0.3};
  const double same_d[] = {0.7, 0.7};
  CHECK(appendix_g_pick(same_d, same_p, 2, a) == 0);
  CHECK(appendix_g_pick(d + 2, p + 2, 1, a) == 0);
}
