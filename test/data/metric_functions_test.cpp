// Classification and correlation metrics against values computed by hand (each case's comment
// gives the computation).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "data/metric_functions.h"
#include "engine/error.h"

namespace electra {
namespace {

using Ints = std::vector<int32_t>;
using Doubles = std::vector<double>;

TEST_CASE("accuracy") {
  // 3 of 4 agree.
  CHECK(accuracy(Ints{0, 1, 2, 1}, Ints{0, 1, 1, 1}) == Approx(0.75));
  CHECK_THROWS_AS(accuracy(Ints{0, 1}, Ints{0}), Error);
  CHECK_THROWS_AS(accuracy(Ints{}, Ints{}), Error);
}

TEST_CASE("f1_binary: positive class 1") {
  // TP = 2 (positions 0, 2), FP = 1 (1), FN = 1 (3): F1 = 2*2 / (2*2 + 1 + 1) = 2/3.
  CHECK(f1_binary(Ints{1, 1, 1, 0, 0, 0}, Ints{1, 0, 1, 1, 0, 0}) == Approx(2.0 / 3.0));
  // No true positive: 0 (precision and recall are 0 or undefined).
  CHECK(f1_binary(Ints{0, 0, 1}, Ints{1, 1, 0}) == 0.0);
  CHECK(f1_binary(Ints{1, 0}, Ints{1, 0}) == 1.0);
}

TEST_CASE("matthews_corrcoef: binary and multiclass") {
  // TP = 3 (0, 1, 7), FP = 1 (2), FN = 1 (6), TN = 3 (3, 4, 5):
  // (3*3 - 1*1) / sqrt(4 * 4 * 4 * 4) = 8 / 16 = 0.5.
  CHECK(matthews_corrcoef(Ints{1, 1, 1, 0, 0, 0, 0, 1}, Ints{1, 1, 0, 0, 0, 0, 1, 1}) ==
        Approx(0.5));
  // Three classes: c = 3 correct of s = 6, p = t = (2, 2, 2):
  // (3*6 - 12) / sqrt((36 - 12) (36 - 12)) = 6 / 24 = 0.25.
  CHECK(matthews_corrcoef(Ints{0, 1, 2, 0, 1, 2}, Ints{0, 1, 2, 1, 2, 0}) == Approx(0.25));
  CHECK(matthews_corrcoef(Ints{1, 0, 1}, Ints{1, 0, 1}) == Approx(1.0));
  CHECK(matthews_corrcoef(Ints{0, 1, 0}, Ints{1, 0, 1}) == Approx(-1.0));
  // A constant prediction: the denominator is 0, the score 0 (as scikit-learn).
  CHECK(matthews_corrcoef(Ints{1, 1, 1}, Ints{1, 0, 1}) == 0.0);
}

TEST_CASE("pearson") {
  // mx = 2.5, my = 5; dx = (-1.5, -0.5, 0.5, 1.5), dy = (-3, -1, 0, 4):
  // sum dx dy = 11, sum dx^2 = 5, sum dy^2 = 26: r = 11 / sqrt(130).
  CHECK(pearson(Doubles{1, 2, 3, 4}, Doubles{2, 4, 5, 9}) == Approx(11.0 / std::sqrt(130.0)));
  CHECK(pearson(Doubles{1, 2, 3}, Doubles{-2, -4, -6}) == Approx(-1.0));
  CHECK(std::isnan(pearson(Doubles{1, 1, 1}, Doubles{1, 2, 3})));
}

TEST_CASE("average_ranks: ties share the mean of their ranks") {
  // Sorted: 1 -> rank 1, 3 -> rank 2, the three 5s take ranks 3, 4, 5 -> 4 each.
  CHECK(average_ranks(Doubles{5, 1, 5, 3, 5}) == Doubles{4, 1, 4, 2, 4});
  CHECK(average_ranks(Doubles{0.5, -1}) == Doubles{2, 1});
}

TEST_CASE("spearman: Pearson of average ranks") {
  // rx = (1, 2.5, 2.5, 4), ry = (1, 3, 2, 4); both means 2.5; dx = (-1.5, 0, 0, 1.5),
  // dy = (-1.5, 0.5, -0.5, 1.5): 4.5 / sqrt(4.5 * 5) = sqrt(0.9) (scipy: 0.9486832980505138).
  CHECK(spearman(Doubles{1, 2, 2, 3}, Doubles{1, 3, 2, 4}) == Approx(std::sqrt(0.9)));
  // Monotone but not linear: rank correlation 1, Pearson below 1.
  CHECK(spearman(Doubles{1, 2, 3}, Doubles{1, 10, 100}) == Approx(1.0));
  CHECK(pearson(Doubles{1, 2, 3}, Doubles{1, 10, 100}) < 0.95);
}

}  // namespace
}  // namespace electra
