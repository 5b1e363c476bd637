// The metrics of a GLUE task (GlueTaskInfo::metrics, in that order) for a set of predictions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/glue.h"

namespace electra {

struct GlueScore {
  GlueMetric metric;
  double value;  // a fraction, e.g. 0.85 accuracy
};

// A classification task: predicted[i] is the class index for gold[i].
std::vector<GlueScore> evaluate_glue(GlueTask task, std::span<const int32_t> predicted,
                                     std::span<const GlueExample> gold);

// The regression task (STS-B): predicted[i] is the score for gold[i].
std::vector<GlueScore> evaluate_glue(GlueTask task, std::span<const float> predicted,
                                     std::span<const GlueExample> gold);

}  // namespace electra
