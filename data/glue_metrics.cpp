#include "data/glue_metrics.h"

#include "data/metric_functions.h"
#include "engine/error.h"

namespace electra {
namespace {

void check_gold(const GlueTaskInfo& info, size_t predicted, std::span<const GlueExample> gold,
                bool regression) {
  ELECTRA_CHECK(info.is_regression() == regression, info.name,
                regression ? " is a classification task: pass class indices"
                           : " is a regression task: pass scores");
  ELECTRA_CHECK(predicted == gold.size(), info.name, ": ", predicted, " predictions for ",
                gold.size(), " examples");
  for (const GlueExample& ex : gold) {
    ELECTRA_USER_CHECK(ex.has_label, info.name, " example ", ex.id,
                       " has no label (test files cannot be evaluated)");
  }
}

}  // namespace

std::vector<GlueScore> evaluate_glue(GlueTask task, std::span<const int32_t> predicted,
                                     std::span<const GlueExample> gold) {
  const GlueTaskInfo& info = glue_task_info(task);
  check_gold(info, predicted.size(), gold, false);
  std::vector<int32_t> labels;
  for (const GlueExample& ex : gold) labels.push_back(ex.label);
  std::vector<GlueScore> scores;
  for (GlueMetric m : info.metrics) {
    switch (m) {
      case GlueMetric::kAccuracy:
        scores.push_back({m, accuracy(predicted, labels)});
        break;
      case GlueMetric::kF1:
        scores.push_back({m, f1_binary(predicted, labels)});
        break;
      case GlueMetric::kMatthews:
        scores.push_back({m, matthews_corrcoef(predicted, labels)});
        break;
      case GlueMetric::kPearson:
      case GlueMetric::kSpearman:
        ELECTRA_CHECK(false, info.name, " lists a regression metric");
    }
  }
  return scores;
}

std::vector<GlueScore> evaluate_glue(GlueTask task, std::span<const float> predicted,
                                     std::span<const GlueExample> gold) {
  const GlueTaskInfo& info = glue_task_info(task);
  check_gold(info, predicted.size(), gold, true);
  const std::vector<double> x(predicted.begin(), predicted.end());
  std::vector<double> y;
  for (const GlueExample& ex : gold) y.push_back(ex.score);
  std::vector<GlueScore> scores;
  for (GlueMetric m : info.metrics) {
    ELECTRA_CHECK(m == GlueMetric::kPearson || m == GlueMetric::kSpearman, info.name,
                  " lists a classification metric");
    scores.push_back({m, m == GlueMetric::kPearson ? pearson(x, y) : spearman(x, y)});
  }
  return scores;
}

}  // namespace electra
