// The operating point of replaced-token detection (apps/detection_threshold.h) on hand-made scores:
// precision and recall at a threshold, and the choice of the threshold with the most recall at a
// minimum precision, made on validation tokens only.
#include "apps/detection_threshold.h"

#include <catch2/catch.hpp>

using namespace electra::apps;

TEST_CASE("detection_at counts flags above the threshold") {
  const std::vector<ScoredToken> tokens = {
      {0.9, true}, {0.7, false}, {0.6, true}, {0.2, true}, {0.1, false}};
  const DetectionAt d = detection_at(tokens, 0.5);
  CHECK(d.flagged == 3);
  CHECK(d.true_positive == 2);
  CHECK(d.replaced == 3);
  CHECK(d.precision == Approx(2.0 / 3));
  CHECK(d.recall == Approx(2.0 / 3));
  // p > threshold: a token scored exactly at the threshold is not flagged.
  CHECK(detection_at(tokens, 0.6).flagged == 2);
  const DetectionAt none = detection_at(tokens, 0.95);
  CHECK(none.flagged == 0);
  CHECK(none.precision == 0);
  CHECK(none.recall == 0);
}

TEST_CASE("choose_threshold takes the most recall at the minimum precision") {
  // Sorted by score: R R O R O R O O. Precision of the top k: 1, 1, 2/3, 3/4, 3/5, 4/6, 4/7, 4/8.
  const std::vector<ScoredToken> validation = {{0.95, true}, {0.05, false}, {0.8, false},
                                               {0.9, true},  {0.6, false},  {0.7, true},
                                               {0.5, true},  {0.1, false}};
  // At precision >= 0.6 the top 6 (4 of 4 replaced: recall 1) qualify; the cut lies between the
  // 6th score (0.5) and the 7th (0.1).
  const std::optional<double> t = choose_threshold(validation, 0.6);
  REQUIRE(t);
  CHECK(*t == Approx(0.3));
  const DetectionAt d = detection_at(validation, *t);
  CHECK(d.recall == 1);
  CHECK(d.precision == Approx(4.0 / 6));
  // At precision >= 0.7 only the top 2 (recall 1/2) or the top 4 (precision 3/4, recall 3/4):
  // the top 4, cut between 0.7 and 0.6.
  const std::optional<double> strict = choose_threshold(validation, 0.7);
  REQUIRE(strict);
  CHECK(*strict == Approx(0.65));
  CHECK(detection_at(validation, *strict).recall == Approx(0.75));
  // Precision 1: the top 2.
  const std::optional<double> exact = choose_threshold(validation, 1.0);
  REQUIRE(exact);
  CHECK(*exact == Approx(0.85));
}

TEST_CASE("choose_threshold: equal scores are flagged together, ties keep fewer flags") {
  // The two 0.8s are one original and one replaced: the cut cannot separate them.
  const std::vector<ScoredToken> validation = {
      {0.9, true}, {0.8, false}, {0.8, true}, {0.3, false}, {0.2, false}};
  // Precision >= 0.6: top 1 (1.0) or top 3 (2/3, recall 1); top 4 (1/2) does not qualify.
  const std::optional<double> t = choose_threshold(validation, 0.6);
  REQUIRE(t);
  CHECK(*t == Approx(0.55));
  // At precision >= 0.4 flagging all 5 (2/5) and the top 4 (2/4) give the same recall as the top
  // 3: the top 3 is kept.
  CHECK(*choose_threshold(validation, 0.4) == Approx(0.55));
}

TEST_CASE("choose_threshold: every token when that is needed, none when unreachable") {
  const std::vector<ScoredToken> all_replaced = {{0.3, true}, {0.2, true}, {0.1, true}};
  const std::optional<double> t = choose_threshold(all_replaced, 0.5);
  REQUIRE(t);
  CHECK(*t == 0);
  CHECK(detection_at(all_replaced, *t).recall == 1);
  // The highest-scored token is an original and the replaced one is scored lowest: precision 0.5
  // is never reached.
  CHECK_FALSE(choose_threshold({{0.9, false}, {0.8, false}, {0.1, true}}, 0.5));
  CHECK_FALSE(choose_threshold({{0.9, false}, {0.1, false}}, 0.5));  // nothing replaced
  CHECK_FALSE(choose_threshold({}, 0.5));
}

TEST_CASE("the choice is made on validation tokens, and measured on others") {
  // Validation is separable at 0.5; on test tokens the same threshold gives what it gives, and
  // choosing on the test tokens themselves would have given a different (fitted) threshold.
  const std::vector<ScoredToken> validation = {{0.7, true}, {0.6, true}, {0.4, false}};
  const std::vector<ScoredToken> test = {{0.65, true}, {0.55, false}, {0.52, true}, {0.3, true}};
  const std::optional<double> t = choose_threshold(validation, 0.9);
  REQUIRE(t);
  CHECK(*t == Approx(0.5));
  const DetectionAt d = detection_at(test, *t);
  CHECK(d.flagged == 3);
  CHECK(d.recall == Approx(2.0 / 3));
  CHECK(d.precision == Approx(2.0 / 3));
  CHECK(*choose_threshold(test, 0.9) == Approx(0.6));
}
