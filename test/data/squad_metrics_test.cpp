// SQuAD answer normalisation, EM and F1 as the official evaluate-v2.0.py computes them.
#include <catch2/catch.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/squad_metrics.h"
#include "engine/error.h"

namespace electra {
namespace {

TEST_CASE("normalize_squad_answer: lowercase, punctuation, articles, whitespace") {
  // lower: "the  cat's, hat!"; remove_punc: "the  cats hat"; remove_articles: "   cats hat";
  // white_space_fix: "cats hat".
  CHECK(normalize_squad_answer("The  Cat's, hat!") == "cats hat");
  CHECK(normalize_squad_answer(" A theater\tan ant\n") == "theater ant");  // only whole words
  CHECK(normalize_squad_answer("a-b") == "ab");  // punctuation goes first: "ab" is no article
  CHECK(normalize_squad_answer("ZÜRICH") == "zürich");
  // Non-ASCII punctuation is not removed but is a word boundary for the article rule.
  CHECK(normalize_squad_answer("The\u2014end \u201cquote\u201d") == "\u2014end \u201cquote\u201d");
  CHECK(normalize_squad_answer("the an a").empty());
}

TEST_CASE("squad_exact_match and squad_f1") {
  CHECK(squad_exact_match("The Cat", "cat") == 1.0);
  CHECK(squad_exact_match("black cat", "cat") == 0.0);
  // pred tokens (big, black, cat), gold (black, cat, sat): 2 shared, P = R = 2/3, F1 = 2/3.
  CHECK(squad_f1("the big black cat", "black cat sat") == Approx(2.0 / 3.0));
  // Counts clip: pred (x, x, y), gold (x, y, y): shared min(2,1) + min(1,2) = 2, F1 = 2/3.
  CHECK(squad_f1("x x y", "x y y") == Approx(2.0 / 3.0));
  CHECK(squad_f1("dog", "cat") == 0.0);
  // No tokens on one side: 1 when both are empty (after normalisation), else 0.
  CHECK(squad_f1("", "") == 1.0);
  CHECK(squad_f1("the", "") == 1.0);
  CHECK(squad_f1("cat", "") == 0.0);
}

TEST_CASE("evaluate_squad: max over gold answers, empty answer for impossible questions") {
  std::vector<SquadExample> examples(3);
  examples[0].id = "where";
  examples[0].answers = {{"France", 40}, {"in France", 37}};
  examples[1].id = "impossible";
  examples[1].is_impossible = true;
  examples[2].id = "when";
  examples[2].answers = {{"10th century", 80}};
  // where: "in france." matches the second gold: EM 1, F1 1. impossible: "" matches "": 1, 1.
  // when: pred (10th, century, ago) vs gold (10th, century): EM 0, P = 2/3, R = 1, F1 = 0.8.
  const std::unordered_map<std::string, std::string> predictions = {
      {"where", "in france."}, {"impossible", ""}, {"when", "the 10th century ago"}};
  const SquadScores s = evaluate_squad(examples, predictions);
  CHECK(s.total == 3);
  CHECK(s.exact == Approx(2.0 / 3.0));
  CHECK(s.f1 == Approx((1 + 1 + 0.8) / 3));
  CHECK(s.has_answer_total == 2);
  CHECK(s.has_answer_exact == Approx(0.5));
  CHECK(s.has_answer_f1 == Approx(0.9));
  CHECK(s.no_answer_total == 1);
  CHECK(s.no_answer_exact == 1.0);
  // Answering an impossible question scores 0.
  const auto wrong = evaluate_squad(std::span(examples).subspan(1, 1), {{"impossible", "France"}});
  CHECK(wrong.exact == 0.0);
  CHECK(wrong.f1 == 0.0);
  CHECK_THROWS_WITH(evaluate_squad(examples, {{"where", "France"}}),
                    Catch::Contains("no prediction for SQuAD question impossible"));
}

}  // namespace
}  // namespace electra
