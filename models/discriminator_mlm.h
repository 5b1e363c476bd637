// ELECTRA's discriminator used as a masked language model (Clark et al. 2020, Appendix G).
//
// At a masked position with context c, the generator proposes candidates x with probabilities
// pG(x | c); the discriminator, given x placed at the position, says D(x, c), the probability that
// x is the original. If a masked position holds the original with prior probability 1 - p_mask
// and a generator sample otherwise, Bayes' rule turns D into a score proportional to the
// probability that x is the original token:
//
//   score(x) = D(x, c) pG(x | c) / (a (1 - D(x, c)) + pG(x | c)),   a = (1 - p_mask) / p_mask
//
// and the discriminator's prediction is the argmax of the score over the generator's top-k
// candidates (`electra mlm-eval`). The score is not a normalised distribution, so no loss goes
// with it.
#pragma once

#include <cstddef>

namespace electra {

// a = (1 - p_mask) / p_mask; p_mask in (0, 1).
double appendix_g_prior_ratio(double mask_prob);

// score(x) above for one candidate: d = D(x, c) in [0, 1], p = pG(x | c) in [0, 1]. 0 when both
// the numerator and the denominator are 0 (d = 0, or p = 0 and d = 1).
double appendix_g_score(double d, double p, double a);

// The index in [0, k) of the candidate with the largest score (the first on ties); k > 0.
size_t appendix_g_pick(const double* d, const double* p, size_t k, double a);

}  // namespace electra
