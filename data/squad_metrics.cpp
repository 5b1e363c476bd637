#include "data/squad_metrics.h"

#include <algorithm>
#include <map>

#include "data/squad_text.h"
#include "engine/error.h"

namespace electra {
namespace {

// Python's string.punctuation.
bool is_ascii_punctuation(char32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
         (cp >= 123 && cp <= 126);
}

bool is_article(const std::vector<char32_t>& word) {
  return word == std::vector<char32_t>{U'a'} || word == std::vector<char32_t>{U'a', U'n'} ||
         word == std::vector<char32_t>{U't', U'h', U'e'};
}

std::vector<std::string> normalized_tokens(std::string_view text) {
  std::vector<std::string> tokens;
  std::string current;
  for (char c : normalize_squad_answer(text)) {
    if (c == ' ') {
      tokens.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

template <class Metric>
double max_over_gold(std::string_view prediction, const std::vector<SquadAnswer>& answers,
                     Metric metric) {
  // Gold answers that normalise to nothing are dropped; with none left the gold is "".
  double best = 0;
  bool any = false;
  for (const SquadAnswer& a : answers) {
    if (normalize_squad_answer(a.text).empty()) continue;
    best = std::max(best, metric(prediction, a.text));
    any = true;
  }
  return any ? best : metric(prediction, "");
}

}  // namespace

std::string normalize_squad_answer(std::string_view text) {
  // lower, then remove_punc.
  std::vector<char32_t> cps;
  for (char32_t cp : decode_utf8(text, "SQuAD answer")) {
    const char32_t lower = lower_code_point(cp);
    if (!is_ascii_punctuation(lower)) cps.push_back(lower);
  }
  // remove_articles: re.sub(r"\b(a|an|the)\b", " ", text), \b between word (alphanumeric or _)
  // and non-word characters. Then white_space_fix: " ".join(text.split()).
  std::vector<char32_t> spaced;
  for (size_t i = 0; i < cps.size();) {
    const auto is_word = [&](size_t k) { return is_python_alnum(cps[k]) || cps[k] == U'_'; };
    if (!is_word(i)) {
      spaced.push_back(cps[i++]);
      continue;
    }
    size_t end = i;
    while (end < cps.size() && is_word(end)) ++end;
    const std::vector<char32_t> word(cps.begin() + i, cps.begin() + end);
    if (is_article(word)) {
      spaced.push_back(U' ');
    } else {
      spaced.insert(spaced.end(), word.begin(), word.end());
    }
    i = end;
  }
  std::string out;
  bool pending_space = false;
  for (char32_t cp : spaced) {
    if (is_python_space(cp)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    append_utf8(out, cp);
  }
  return out;
}

double squad_exact_match(std::string_view prediction, std::string_view gold) {
  return normalize_squad_answer(prediction) == normalize_squad_answer(gold) ? 1.0 : 0.0;
}

double squad_f1(std::string_view prediction, std::string_view gold) {
  const std::vector<std::string> pred = normalized_tokens(prediction);
  const std::vector<std::string> ref = normalized_tokens(gold);
  if (pred.empty() || ref.empty()) return pred == ref ? 1.0 : 0.0;
  std::map<std::string, int> counts;
  for (const auto& t : ref) ++counts[t];
  double same = 0;
  for (const auto& t : pred) {
    auto it = counts.find(t);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  if (same == 0) return 0.0;
  const double precision = same / static_cast<double>(pred.size());
  const double recall = same / static_cast<double>(ref.size());
  return 2 * precision * recall / (precision + recall);
}

SquadScores evaluate_squad(std::span<const SquadExample> examples,
                           const std::unordered_map<std::string, std::string>& predictions) {
  SquadScores s;
  for (const SquadExample& ex : examples) {
    const auto it = predictions.find(ex.id);
    ELECTRA_USER_CHECK(it != predictions.end(), "no prediction for SQuAD question ", ex.id);
    const double em = max_over_gold(it->second, ex.answers, squad_exact_match);
    const double f1 = max_over_gold(it->second, ex.answers, squad_f1);
    s.exact += em;
    s.f1 += f1;
    ++s.total;
    if (ex.answers.empty()) {
      s.no_answer_exact += em;
      ++s.no_answer_total;
    } else {
      s.has_answer_exact += em;
      s.has_answer_f1 += f1;
      ++s.has_answer_total;
    }
  }
  const auto mean = [](double sum, size_t n) { return n == 0 ? 0.0 : sum / n; };
  s.exact = mean(s.exact, s.total);
  s.f1 = mean(s.f1, s.total);
  s.has_answer_exact = mean(s.has_answer_exact, s.has_answer_total);
  s.has_answer_f1 = mean(s.has_answer_f1, s.has_answer_total);
  s.no_answer_exact = mean(s.no_answer_exact, s.no_answer_total);
  return s;
}

}  // namespace electra
