#include "apps/detection_threshold.h"

#include <algorithm>

namespace electra::apps {

DetectionAt detection_at(const std::vector<ScoredToken>& tokens, double threshold) {
  DetectionAt d;
  d.threshold = threshold;
  d.tokens = tokens.size();
  for (const ScoredToken& t : tokens) {
    const bool flagged = t.p > threshold;
    d.replaced += t.replaced;
    d.flagged += flagged;
    d.true_positive += flagged && t.replaced;
  }
  d.precision = d.flagged > 0 ? static_cast<double>(d.true_positive) / d.flagged : 0;
  d.recall = d.replaced > 0 ? static_cast<double>(d.true_positive) / d.replaced : 0;
  return d;
}

std::optional<double> choose_threshold(std::vector<ScoredToken> validation, double min_precision) {
  // Highest score first; flagging the first k tokens is the threshold between score k-1 and k.
  std::sort(validation.begin(), validation.end(),
            [](const ScoredToken& a, const ScoredToken& b) { return a.p > b.p; });
  std::optional<double> best;
  size_t best_true_positive = 0, true_positive = 0;
  for (size_t k = 0; k < validation.size(); ++k) {
    true_positive += validation[k].replaced;
    // Tokens with the same score are flagged together: only cut where the score changes.
    const bool last = k + 1 == validation.size();
    if (!last && validation[k + 1].p == validation[k].p) continue;
    const double precision = static_cast<double>(true_positive) / static_cast<double>(k + 1);
    // Strictly more recall (more true positives) than the best so far: ties keep fewer flags.
    if (precision >= min_precision && true_positive > best_true_positive) {
      best_true_positive = true_positive;
      best = last ? 0.0 : (validation[k].p + validation[k + 1].p) / 2;
    }
  }
  return best;
}

}  // namespace electra::apps
