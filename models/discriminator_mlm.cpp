#include "models/discriminator_mlm.h"

#include "engine/error.h"

namespace electra {

double appendix_g_prior_ratio(double mask_prob) {
  ELECTRA_CHECK(mask_prob > 0 && mask_prob < 1, "appendix_g_prior_ratio: p_mask ", mask_prob,
                " outside (0, 1)");
  return (1 - mask_prob) / mask_prob;
}

double appendix_g_score(double d, double p, double a) {
  const double denominator = a * (1 - d) + p;
  return denominator > 0 ? d * p / denominator : 0.0;
}

size_t appendix_g_pick(const double* d, const double* p, size_t k, double a) {
  ELECTRA_CHECK(k > 0, "appendix_g_pick: no candidate");
  size_t best = 0;
  double best_score = appendix_g_score(d[0], p[0], a);
  for (size_t j = 1; j < k; ++j) {
    const double score = appendix_g_score(d[j], p[j], a);
    if (score > best_score) best = j, best_score = score;
  }
  return best;
}

}  // namespace electra
