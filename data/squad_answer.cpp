#include "data/squad_answer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "data/squad_text.h"
#include "engine/error.h"

namespace electra {
namespace {

// _get_best_indexes: the n highest logits' positions, ties in position order.
std::vector<int32_t> best_indexes(std::span<const float> logits, size_t count, int32_t n) {
  std::vector<int32_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (order.size() > static_cast<size_t>(n)) order.resize(n);
  return order;
}

struct Prelim {
  size_t feature;
  int32_t start, end;
  float start_logit, end_logit;
};

// Context code points [begin, end) with every run of document whitespace turned into one space.
std::string squeeze_span(const std::vector<char32_t>& cps, int32_t begin, int32_t end) {
  std::string out;
  bool in_space = false;
  for (int32_t i = begin; i < end; ++i) {
    if (is_squad_whitespace(cps[i])) {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out += ' ';
    in_space = false;
    append_utf8(out, cps[i]);
  }
  return out;
}

}  // namespace

SquadPrediction extract_answer(const SquadExample& example, std::span<const SquadFeature> features,
                               std::span<const SquadLogits> logits, const SquadTokenizer& tokenizer,
                               const SquadAnswerOptions& options) {
  ELECTRA_CHECK(features.size() == logits.size(), "SQuAD example ", example.id, ": ",
                features.size(), " features but ", logits.size(), " logit rows");
  SquadPrediction out;
  out.null_score = std::numeric_limits<double>::infinity();
  std::vector<Prelim> prelim;
  for (size_t f = 0; f < features.size(); ++f) {
    const SquadFeature& feature = features[f];
    const size_t n = feature.input_ids.size();
    ELECTRA_CHECK(feature.example_index == features[0].example_index,
                  "features of several examples passed for SQuAD example ", example.id);
    ELECTRA_CHECK(logits[f].start.size() >= n && logits[f].end.size() >= n, "SQuAD example ",
                  example.id, " window ", f, ": ", n, " tokens but ", logits[f].start.size(),
                  " start and ", logits[f].end.size(), " end logits");
    out.null_score = std::min(out.null_score, static_cast<double>(logits[f].start[0]) +
                                                  static_cast<double>(logits[f].end[0]));
    for (int32_t s : best_indexes(logits[f].start, n, options.n_best)) {
      for (int32_t e : best_indexes(logits[f].end, n, options.n_best)) {
        if (feature.token_to_orig_map[s] < 0 || feature.token_to_orig_map[e] < 0) continue;
        if (!feature.token_is_max_context[s] || e < s) continue;
        if (e - s + 1 > options.max_answer_len) continue;
        prelim.push_back({f, s, e, logits[f].start[s], logits[f].end[e]});
      }
    }
  }
  std::stable_sort(prelim.begin(), prelim.end(), [](const Prelim& a, const Prelim& b) {
    return a.start_logit + a.end_logit > b.start_logit + b.end_logit;
  });

  const SquadDocTokens doc = tokenize_document(example, tokenizer.wordpiece);
  const std::vector<char32_t> cps = decode_utf8(example.context(), example.id);
  std::set<std::string> seen;
  for (const Prelim& p : prelim) {
    if (out.nbest.size() >= static_cast<size_t>(options.n_best)) break;
    const SquadFeature& feature = features[p.feature];
    const int32_t first = feature.doc_start + (p.start - feature.doc_offset);
    const int32_t last = feature.doc_start + (p.end - feature.doc_offset);
    SquadCandidate c;
    c.char_begin = doc.char_begin.at(first);
    c.char_end = doc.char_end.at(last);
    c.text = squeeze_span(cps, c.char_begin, c.char_end);
    c.start_logit = p.start_logit;
    c.end_logit = p.end_logit;
    if (!seen.insert(c.text).second) continue;
    out.nbest.push_back(std::move(c));
  }
  if (!out.nbest.empty()) {
    out.text = out.nbest.front().text;
    out.score = static_cast<double>(out.nbest.front().start_logit) + out.nbest.front().end_logit;
  }
  return out;
}

std::string answer_or_null(const SquadPrediction& prediction, double threshold) {
  if (prediction.nbest.empty() || prediction.null_score - prediction.score > threshold) return "";
  return prediction.text;
}

}  // namespace electra
