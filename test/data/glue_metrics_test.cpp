// evaluate_glue: each task's metrics in order, computed on the task's gold labels.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "data/glue_metrics.h"
#include "engine/error.h"

namespace electra {
namespace {

std::vector<GlueExample> labelled(const std::vector<int32_t>& labels) {
  std::vector<GlueExample> out;
  for (int32_t l : labels) {
    GlueExample ex;
    ex.label = l;
    ex.has_label = true;
    out.push_back(ex);
  }
  return out;
}

TEST_CASE("evaluate_glue: MRPC gives F1 then accuracy") {
  // gold 1 1 0 0 1, predicted 1 0 0 1 1: TP 2, FP 1, FN 1, TN 1.
  // F1 = 2*2 / (2*2 + 1 + 1) = 4/6; accuracy = 3/5.
  const std::vector<int32_t> predicted = {1, 0, 0, 1, 1};
  const auto scores = evaluate_glue(GlueTask::kMRPC, predicted, labelled({1, 1, 0, 0, 1}));
  REQUIRE(scores.size() == 2);
  CHECK(scores[0].metric == GlueMetric::kF1);
  CHECK(scores[0].value == Approx(4.0 / 6.0));
  CHECK(scores[1].metric == GlueMetric::kAccuracy);
  CHECK(scores[1].value == Approx(0.6));
}

TEST_CASE("evaluate_glue: CoLA gives MCC") {
  // Same counts: MCC = (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))
  //                  = (2*1 - 1*1) / sqrt(3*3*2*2) = 1/6.
  const std::vector<int32_t> predicted = {1, 0, 0, 1, 1};
  const auto scores = evaluate_glue(GlueTask::kCoLA, predicted, labelled({1, 1, 0, 0, 1}));
  REQUIRE(scores.size() == 1);
  CHECK(scores[0].metric == GlueMetric::kMatthews);
  CHECK(scores[0].value == Approx(1.0 / 6.0));
}

TEST_CASE("evaluate_glue: STS-B gives Pearson then Spearman") {
  // gold 1 2 3, predicted 1 3 2: the values are their own ranks, so Pearson = Spearman =
  // sum dx dy / sqrt(sum dx^2 sum dy^2) with dx = (-1, 0, 1), dy = (-1, 1, 0):
  // (1 + 0 + 0) / sqrt(2 * 2) = 0.5.
  std::vector<GlueExample> gold(3);
  for (int i = 0; i < 3; ++i) {
    gold[i].score = static_cast<float>(i + 1);
    gold[i].has_label = true;
  }
  const std::vector<float> predicted = {1, 3, 2};
  const auto scores = evaluate_glue(GlueTask::kSTSB, predicted, gold);
  REQUIRE(scores.size() == 2);
  CHECK(scores[0].metric == GlueMetric::kPearson);
  CHECK(scores[0].value == Approx(0.5));
  CHECK(scores[1].metric == GlueMetric::kSpearman);
  CHECK(scores[1].value == Approx(0.5));
}

TEST_CASE("evaluate_glue: unlabelled examples and mismatched inputs are refused") {
  std::vector<GlueExample> gold = labelled({1, 0});
  gold[1].has_label = false;
  gold[1].id = "17";
  const std::vector<int32_t> predicted = {1, 0};
  CHECK_THROWS_WITH(evaluate_glue(GlueTask::kSST2, predicted, gold),
                    Catch::Contains("example 17 has no label"));
  const std::vector<int32_t> short_predicted = {1};
  CHECK_THROWS_AS(evaluate_glue(GlueTask::kSST2, short_predicted, labelled({1, 0})), Error);
  const std::vector<float> scores = {1, 0};
  CHECK_THROWS_AS(evaluate_glue(GlueTask::kSST2, scores, labelled({1, 0})), Error);
}

}  // namespace
}  // namespace electra
