// SQuAD evaluation, as the official evaluate-v2.0.py (which agrees with v1.1 on answerable
// questions): answers are normalised (lowercase, ASCII punctuation removed, the articles a/an/the
// removed, whitespace collapsed), EM and F1 are taken as the maximum over the gold answers, and a
// question without gold answers (SQuAD 2.0 impossible, or only answers that normalise to "")
// counts "" as its only gold answer.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/squad.h"

namespace electra {

std::string normalize_squad_answer(std::string_view text);

// 1 when the normalised texts are equal, else 0.
double squad_exact_match(std::string_view prediction, std::string_view gold);

// Bag-of-tokens F1 of the normalised texts' whitespace tokens; when either has no token, 1 if both
// have none, else 0.
double squad_f1(std::string_view prediction, std::string_view gold);

struct SquadScores {
  double exact = 0, f1 = 0;  // fractions over all questions
  size_t total = 0;
  double has_answer_exact = 0, has_answer_f1 = 0;  // over questions with gold answers
  size_t has_answer_total = 0;
  double no_answer_exact = 0;  // over questions without (EM = F1 there)
  size_t no_answer_total = 0;
};

// Scores predictions (question id -> answer text, "" for "no answer"); every example must have a
// prediction (a UserError names the first missing id).
SquadScores evaluate_squad(std::span<const SquadExample> examples,
                           const std::unordered_map<std::string, std::string>& predictions);

}  // namespace electra
