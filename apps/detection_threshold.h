// Precision and recall of replaced-token detection over thresholds, and an operating point chosen
// honestly: the threshold that maximises recall subject to a minimum precision is chosen on one set
// of tokens (validation) and then measured on another (test), so that the reported figures are not
// fitted to the tokens they are measured on. Used by `electra pretrain-eval`.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace electra::apps {

// One token: the discriminator's probability that it was replaced, and whether it was.
struct ScoredToken {
  double p = 0;
  bool replaced = false;
};

// Detection at one threshold: a token is flagged when p > threshold.
struct DetectionAt {
  double threshold = 0, precision = 0, recall = 0;  // precision 0 when nothing is flagged
  size_t flagged = 0, true_positive = 0, replaced = 0, tokens = 0;
};

DetectionAt detection_at(const std::vector<ScoredToken>& tokens, double threshold);

// The threshold with the largest recall among those whose precision on `validation` is at least
// `min_precision` (ties: the higher threshold, i.e. fewer flags). The candidates are the midpoints
// between consecutive distinct scores (flagging the k highest-scored tokens for every k), and 0
// (flagging every token with p > 0). nullopt when no threshold reaches `min_precision` (e.g. no
// replaced token, or none among the highest-scored).
std::optional<double> choose_threshold(std::vector<ScoredToken> validation, double min_precision);

}  // namespace electra::apps
