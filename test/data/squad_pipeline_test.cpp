// SQuAD featurisation (sliding windows, max context, answer positions) and answer extraction
// (logits -> text of the original context), with a toy tokenizer behind the WordPieceFn interface.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/squad.h"
#include "data/squad_answer.h"
#include "data/squad_features.h"
#include "engine/error.h"

namespace electra {
namespace {

// A stand-in for BERT's tokenizer with the same structure: a word is split at ASCII punctuation
// (each mark its own piece), pieces are lowercased (ASCII) and cut into WordPieces of at most 3
// bytes (never inside a UTF-8 sequence), continuations prefixed "##". Ids are given out in order
// of first appearance from 1000 on; 101/102 are [CLS]/[SEP].
class ToyTokenizer {
 public:
  std::vector<int32_t> operator()(const std::string& word) {
    std::vector<int32_t> ids;
    std::string piece;
    const auto flush = [&] {
      for (size_t begin = 0; begin < piece.size();) {
        size_t end = std::min(begin + 3, piece.size());
        while (end < piece.size() && (static_cast<unsigned char>(piece[end]) & 0xC0) == 0x80) {
          --end;
        }
        ids.push_back(id((begin == 0 ? "" : "##") + piece.substr(begin, end - begin)));
        begin = end;
      }
      piece.clear();
    };
    for (char c : word) {
      if (std::ispunct(static_cast<unsigned char>(c))) {
        flush();
        piece = c;
        flush();
      } else {
        piece += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    flush();
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids, size_t begin, size_t end) const {
    std::string out;
    for (size_t i = begin; i < end; ++i) {
      out += (i == begin ? "" : " ") + (ids[i] == 101   ? "[CLS]"
                                        : ids[i] == 102 ? "[SEP]"
                                                        : tokens_.at(ids[i] - 1000));
    }
    return out;
  }

  SquadTokenizer tokenizer() {
    return {[this](const std::string& w) { return (*this)(w); }, 101, 102};
  }

 private:
  int32_t id(const std::string& token) {
    const auto [it, inserted] = ids_.emplace(token, static_cast<int32_t>(1000 + tokens_.size()));
    if (inserted) tokens_.push_back(token);
    return it->second;
  }
  std::map<std::string, int32_t> ids_;
  std::vector<std::string> tokens_;
};

SquadExample make_example(const std::string& context, const std::string& question,
                          const std::string& answer, int32_t answer_start) {
  using nlohmann::json;
  json qa = json::object({{"id", "e"}, {"question", question}});
  qa["answers"] = json::array({json::object({{"text", answer}, {"answer_start", answer_start}})});
  json paragraph = json::object({{"context", context}});
  paragraph["qas"] = json::array({qa});
  json article = json::object();
  article["paragraphs"] = json::array({paragraph});
  json root = json::object();
  root["data"] = json::array({article});
  return parse_squad(root.dump(), "inline").examples.at(0);
}

// "w0 w1 ... w29": one sub-token per word, so sub-token k is word k.
std::string numbered_words(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? " w" : "w") + std::to_string(i);
  return out;
}

// Logits with a distinct, non-zero baseline (-1 - 0.001 i) and chosen peaks.
std::vector<float> logits_with(size_t n, std::map<int32_t, float> peaks) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = -1.0f - 0.001f * static_cast<float>(i);
  for (const auto& [pos, value] : peaks) out.at(pos) = value;
  return out;
}

struct Run {
  std::vector<std::vector<float>> start, end;
  std::vector<SquadLogits> views() const {
    std::vector<SquadLogits> v;
    for (size_t i = 0; i < start.size(); ++i) v.push_back({start[i], end[i]});
    return v;
  }
};

TEST_CASE("featurize_squad: windows, query, positions, max context") {
  ToyTokenizer toy;
  const SquadTokenizer tok = toy.tokenizer();
  const std::string context = numbered_words(30);
  const int32_t start = static_cast<int32_t>(context.find("w10 w11"));
  const SquadExample ex = make_example(context, "Find w10?", "w10 w11", start);
  // Query "Find w10?" -> fin ##d w10 ? = 4 sub-tokens. max_seq_len 16 leaves 16 - 4 - 3 = 9 doc
  // sub-tokens per window; 30 sub-tokens with stride 4 give windows starting at
  // 0, 4, 8, 12, 16, 20 (length 9) and 24 (length 6, reaching the end): 7 windows.
  const auto features = featurize_squad(std::vector{ex}, tok, {16, 4, 8});
  REQUIRE(features.size() == 7);
  const std::vector<int32_t> starts = {0, 4, 8, 12, 16, 20, 24};
  for (size_t s = 0; s < features.size(); ++s) {
    const SquadFeature& f = features[s];
    CHECK(f.span_index == static_cast<int32_t>(s));
    CHECK(f.doc_start == starts[s]);
    CHECK(f.doc_offset == 6);
    const size_t doc_len = s == 6 ? 6 : 9;
    REQUIRE(f.input_ids.size() == 6 + doc_len + 1);
    CHECK(toy.decode(f.input_ids, 0, 6) == "[CLS] fin ##d w10 ? [SEP]");
    CHECK(f.input_ids.back() == 102);
    CHECK(toy.decode(f.input_ids, 6, 7) == "w" + std::to_string(starts[s]));
    CHECK(f.token_to_orig_map[5] == -1);
    CHECK(f.token_to_orig_map[6] == starts[s]);
    CHECK(f.token_to_orig_map.back() == -1);
  }
  // The answer (sub-tokens 10..11) lies wholly in windows 1 (4..12) and 2 (8..16) only.
  CHECK(features[1].start_position == 10 - 4 + 6);
  CHECK(features[1].end_position == 11 - 4 + 6);
  CHECK(features[2].start_position == 10 - 8 + 6);
  CHECK(toy.decode(features[2].input_ids, features[2].start_position,
                   features[2].end_position + 1) == "w10 w11");
  for (size_t s : {0, 3, 4, 5, 6}) {
    CHECK(features[s].start_position == 0);
    CHECK(features[s].end_position == 0);
  }
  // Every doc sub-token has exactly one max-context window. Sub-token 12: window 1 (4..12) scores
  // min(8, 0) + 0.09, window 2 (8..16) min(4, 4) + 0.09, window 3 (12..20) min(0, 8) + 0.09.
  std::vector<int> owners(30, 0);
  for (const SquadFeature& f : features) {
    for (size_t p = 0; p < f.input_ids.size(); ++p) {
      if (f.token_is_max_context[p]) ++owners.at(f.token_to_orig_map[p]);
    }
  }
  CHECK(owners == std::vector<int>(30, 1));
  CHECK(features[2].token_is_max_context[12 - 8 + 6] == 1);
  CHECK(features[1].token_is_max_context[12 - 4 + 6] == 0);
  CHECK(features[3].token_is_max_context[12 - 12 + 6] == 0);

  // max_query_len 3 cuts the query to "fin ##d w10".
  const auto cut = featurize_squad(std::vector{ex}, tok, {16, 4, 3});
  CHECK(toy.decode(cut[0].input_ids, 0, 5) == "[CLS] fin ##d w10 [SEP]");
  CHECK(cut[0].doc_offset == 5);
  CHECK_THROWS_AS(featurize_squad(std::vector{ex}, tok, {8, 4, 5}), UserError);
}

TEST_CASE("featurize_squad: the answer span is tightened to the tokenised answer") {
  ToyTokenizer toy;
  // "1895" is inside the word "(1895-1943),": the word gives ( 189 ##5 - 194 ##3 ) , and the
  // answer's sub-tokens 189 ##5 are found inside it.
  const std::string context = "opened in 1898 (1895-1943), after";
  const SquadExample ex =
      make_example(context, "When?", "1895", static_cast<int32_t>(context.find("1895")));
  CHECK(ex.start_word == 3);
  const auto features = featurize_squad(std::vector{ex}, toy.tokenizer());
  REQUIRE(features.size() == 1);
  const SquadFeature& f = features[0];
  CHECK(toy.decode(f.input_ids, f.start_position, f.end_position + 1) == "189 ##5");
}

TEST_CASE("featurize_squad: impossible questions point at [CLS]") {
  ToyTokenizer toy;
  const std::string json =
      R"({"data": [{"paragraphs": [{"context": "Normans came from Normandy.", "qas": [{"id": "i",)"
      R"( "question": "Who?", "answers": [], "is_impossible": true}]}]}]})";
  const auto examples = parse_squad(json, "inline", SquadReadOptions{true}).examples;
  const auto features = featurize_squad(examples, toy.tokenizer());
  REQUIRE(features.size() == 1);
  CHECK(features[0].start_position == 0);
  CHECK(features[0].end_position == 0);
  CHECK(toy.decode(features[0].input_ids, 0, features[0].input_ids.size()) ==
        "[CLS] who ? [SEP] nor ##man ##s cam ##e fro ##m nor ##man ##dy . [SEP]");
}

TEST_CASE("extract_answer: original text with accents, punctuation and whitespace") {
  ToyTokenizer toy;
  const SquadTokenizer tok = toy.tokenizer();
  const std::string context = "The museum in Z\u00FCrich opened  in\n\t1898 (1895-1943), after.";
  const SquadExample ex = make_example(context, "Where?", "museum", 4);
  const auto features = featurize_squad(std::vector{ex}, tok);
  REQUIRE(features.size() == 1);
  const SquadFeature& f = features[0];
  // Doc sub-tokens from position 5 (after [CLS] whe ##re ? [SEP]):
  //  5 the  6 mus  7 ##eum  8 in  9 zü  10 ##ric  11 ##h  12 ope  13 ##ned  14 in  15 189  16 ##8
  //  17 (  18 189  19 ##5  20 -  21 194  22 ##3  23 )  24 ,  25 aft  26 ##er  27 .
  REQUIRE(toy.decode(f.input_ids, 9, 12) == "z\u00FC ##ric ##h");
  REQUIRE(toy.decode(f.input_ids, 17, 25) == "( 189 ##5 - 194 ##3 ) ,");
  const auto answer = [&](int32_t s, int32_t e) {
    Run run;
    run.start.push_back(logits_with(f.input_ids.size(), {{s, 5.0f}}));
    run.end.push_back(logits_with(f.input_ids.size(), {{e, 4.0f}}));
    const auto views = run.views();
    return extract_answer(ex, features, views, tok);
  };
  CHECK(answer(9, 11).text == "Z\u00FCrich");  // original case and accent
  CHECK(answer(9, 10).text == "Z\u00FCrich");  // ending inside a piece widens to the piece
  CHECK(answer(18, 19).text == "1895");        // a piece out of "(1895-1943),"
  CHECK(answer(17, 23).text == "(1895-1943)");
  CHECK(answer(12, 16).text == "opened in 1898");  // "  " and "\n\t" become one space
  const SquadPrediction p = answer(5, 11);
  CHECK(p.text == "The museum in Z\u00FCrich");
  CHECK(p.score == Approx(9.0));
  CHECK(p.nbest.front().char_begin == 0);
  CHECK(p.nbest.front().char_end == 20);
  CHECK(p.null_score == Approx(-2.0));  // start[0] + end[0] = -1 + -1
  CHECK(answer_or_null(p, 0.0) == p.text);
  CHECK(answer_or_null(p, -20.0).empty());  // the null score beats 9 by more than -20
}

TEST_CASE("extract_answer: invalid spans are skipped, n-best is deduplicated") {
  ToyTokenizer toy;
  const SquadTokenizer tok = toy.tokenizer();
  const SquadExample ex = make_example(numbered_words(12), "Find w3?", "w3", 9);
  const auto features = featurize_squad(std::vector{ex}, tok);
  REQUIRE(features.size() == 1);
  const size_t n = features[0].input_ids.size();  // [CLS] fin ##d w3 ? [SEP] w0..w11 [SEP]
  Run run;
  // The best pairs are invalid: start in the query (3), end before start (9 -> 7), end on [SEP]
  // (18), longer than max_answer_len 3 (7 -> 12). The best valid pair is 9..10 ("w3 w4").
  run.start.push_back(logits_with(n, {{3, 9.0f}, {9, 8.0f}, {7, 1.0f}}));
  run.end.push_back(logits_with(n, {{7, 9.0f}, {18, 8.5f}, {12, 8.0f}, {10, 7.0f}}));
  const auto views = run.views();
  const SquadPrediction p = extract_answer(ex, features, views, tok, {20, 3});
  CHECK(p.text == "w3 w4");
  CHECK(p.score == Approx(15.0));
  std::vector<std::string> texts;
  for (const auto& c : p.nbest) texts.push_back(c.text);
  std::sort(texts.begin(), texts.end());
  CHECK(std::adjacent_find(texts.begin(), texts.end()) == texts.end());
  CHECK(p.nbest.size() <= 20);
  // Only 2 best starts/ends per window: the valid pair is not among them, so no answer.
  const SquadPrediction none = extract_answer(ex, features, views, tok, {2, 3});
  CHECK(none.text.empty());
  CHECK(none.nbest.empty());
  CHECK(answer_or_null(none, 100.0).empty());
}

TEST_CASE("extract_answer: an answer at a window boundary comes from its max-context window") {
  ToyTokenizer toy;
  const SquadTokenizer tok = toy.tokenizer();
  const std::string context = numbered_words(30);
  const SquadExample ex =
      make_example(context, "Find w10?", "w8", static_cast<int32_t>(context.find("w8")));
  // Windows as in the featurisation test: doc offset 6, starts 0, 4, 8, ... Sub-token 8 is the
  // last doc token of window 0 (position 14), centred in window 1 (position 10) and first in
  // window 2 (position 6); only window 1 gives it maximum context (min(4, 4) vs min(8, 0), min(0,
  // 8)).
  const auto features = featurize_squad(std::vector{ex}, tok, {16, 4, 8});
  REQUIRE(features.size() == 7);
  CHECK(features[0].token_is_max_context[14] == 0);
  CHECK(features[1].token_is_max_context[10] == 1);
  Run run;
  for (const SquadFeature& f : features) {
    run.start.push_back(logits_with(f.input_ids.size(), {}));
    run.end.push_back(logits_with(f.input_ids.size(), {}));
  }
  // Window 0 is sure a span starts at "w8", its last doc token, and runs into [SEP]; window 2 is
  // sure a span starts at "w8", its first doc token, and ends at "w9" (whose max context is in
  // window 1 too). Only window 1, less sure, owns the start: its "w8" wins with 3 + 2.
  run.start[0][14] = 10.0f;
  run.end[0][15] = 12.0f;
  run.start[1][10] = 3.0f;
  run.end[1][10] = 2.0f;
  run.start[2][6] = 9.0f;
  run.end[2][7] = 9.0f;
  run.start[3][0] = -5.0f;  // window 3 has the least null score
  const auto views = run.views();
  const SquadPrediction p = extract_answer(ex, features, views, tok);
  CHECK(p.text == "w8");
  CHECK(p.score == Approx(5.0));
  CHECK(p.nbest.front().start_logit == 3.0f);
  CHECK(p.null_score == Approx(-6.0));
}

TEST_CASE("extract_answer: a tokenizer that does not split like BERT falls back to whole words") {
  // One id per word: the pieces "(", "1895", ... do not re-tokenise to the word's id.
  std::map<std::string, int32_t> vocab;
  const SquadTokenizer whole = {
      [&](const std::string& w) {
        return std::vector<int32_t>{
            vocab.emplace(w, static_cast<int32_t>(1000 + vocab.size())).first->second};
      },
      101, 102};
  const std::string context = "opened in 1898 (1895-1943), after";
  const SquadExample ex =
      make_example(context, "When?", "1895", static_cast<int32_t>(context.find("1895")));
  const auto features = featurize_squad(std::vector{ex}, whole);
  REQUIRE(features.size() == 1);
  // [CLS] when? [SEP] opened in 1898 (1895-1943), after [SEP]: the word is position 6.
  Run run;
  run.start.push_back(logits_with(features[0].input_ids.size(), {{6, 2.0f}}));
  run.end.push_back(logits_with(features[0].input_ids.size(), {{6, 2.0f}}));
  const auto views = run.views();
  CHECK(extract_answer(ex, features, views, whole).text == "(1895-1943),");
}

}  // namespace
}  // namespace electra
