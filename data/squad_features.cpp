#include "data/squad_features.h"

#include <utf8proc.h>
#include <algorithm>
#include <tuple>

#include "data/squad_text.h"
#include "engine/error.h"

namespace electra {
namespace {

// BERT's _is_punctuation: the ASCII non-alphanumeric printables and Unicode category P*.
bool is_bert_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// BERT's _is_chinese_char: the CJK Unified Ideographs blocks, each tokenised on its own.
bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Characters BERT's _clean_text drops or turns into spaces: they separate pieces.
bool is_bert_separator(char32_t cp) {
  if (cp == 0 || cp == 0xFFFD || is_python_space(cp)) return true;
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF;
}

struct Piece {
  int32_t begin, end;  // code-point span in the context
};

// A word (code points [begin, end) of the context) split as BERT's BasicTokenizer would split it.
std::vector<Piece> basic_pieces(const std::vector<char32_t>& cps, int32_t begin, int32_t end) {
  std::vector<Piece> pieces;
  int32_t start = begin;
  for (int32_t i = begin; i < end; ++i) {
    const char32_t cp = cps[i];
    if (is_bert_separator(cp) || is_bert_punctuation(cp) || is_cjk(cp)) {
      if (start < i) pieces.push_back({start, i});
      if (!is_bert_separator(cp)) pieces.push_back({i, i + 1});
      start = i + 1;
    }
  }
  if (start < end) pieces.push_back({start, end});
  return pieces;
}

// WordPiece ids of a text split into words on whitespace (the query, the answer).
std::vector<int32_t> tokenize_text(const std::string& text, const WordPieceFn& wordpiece) {
  std::vector<std::string> words;
  std::vector<int32_t> offsets;
  split_doc_tokens(text, words, offsets);
  std::vector<int32_t> ids;
  for (const std::string& w : words) {
    const std::vector<int32_t> sub = wordpiece(w);
    ids.insert(ids.end(), sub.begin(), sub.end());
  }
  return ids;
}

// _improve_answer_span: the tightest sub-token span inside [start, end] whose ids equal the
// tokenised answer text (e.g. "1895" inside "(1895-1943)"), else [start, end] unchanged.
std::pair<int32_t, int32_t> improve_answer_span(const std::vector<int32_t>& doc, int32_t start,
                                                int32_t end, const std::vector<int32_t>& answer) {
  for (int32_t s = start; s <= end; ++s) {
    for (int32_t e = end; e >= s; --e) {
      if (static_cast<size_t>(e - s + 1) == answer.size() &&
          std::equal(answer.begin(), answer.end(), doc.begin() + s)) {
        return {s, e};
      }
    }
  }
  return {start, end};
}

struct DocSpan {
  int32_t start, length;
};

// _check_is_max_context: is span `current` the best window for doc sub-token `position`?
bool is_max_context(const std::vector<DocSpan>& spans, size_t current, int32_t position) {
  double best_score = -1;
  size_t best = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const int32_t end = spans[i].start + spans[i].length - 1;
    if (position < spans[i].start || position > end) continue;
    const double score =
        std::min(position - spans[i].start, end - position) + 0.01 * spans[i].length;
    if (score > best_score) {
      best_score = score;
      best = i;
    }
  }
  return best == current;
}

}  // namespace

SquadDocTokens tokenize_document(const SquadExample& example, const WordPieceFn& wordpiece) {
  const std::vector<char32_t> cps = decode_utf8(example.context(), example.id);
  const auto n_words = static_cast<int32_t>(example.doc_tokens().size());
  // Code-point span of every word: it starts at its first non-whitespace code point.
  std::vector<int32_t> word_begin(n_words, -1), word_end(n_words, 0);
  for (int32_t c = 0; c < static_cast<int32_t>(cps.size()); ++c) {
    const int32_t w = example.char_to_word_offset()[c];
    if (w < 0 || is_squad_whitespace(cps[c])) continue;
    if (word_begin[w] < 0) word_begin[w] = c;
    word_end[w] = c + 1;
  }
  SquadDocTokens doc;
  for (int32_t w = 0; w < n_words; ++w) {
    doc.word_start.push_back(static_cast<int32_t>(doc.ids.size()));
    const std::vector<int32_t> word_ids = wordpiece(example.doc_tokens()[w]);
    std::vector<int32_t> piece_ids, begins, ends;
    for (const Piece& piece : basic_pieces(cps, word_begin[w], word_end[w])) {
      for (int32_t id : wordpiece(encode_utf8(cps, piece.begin, piece.end))) {
        piece_ids.push_back(id);
        begins.push_back(piece.begin);
        ends.push_back(piece.end);
      }
    }
    const bool pieces_match = piece_ids == word_ids;
    for (size_t k = 0; k < word_ids.size(); ++k) {
      doc.ids.push_back(word_ids[k]);
      doc.to_word.push_back(w);
      doc.char_begin.push_back(pieces_match ? begins[k] : word_begin[w]);
      doc.char_end.push_back(pieces_match ? ends[k] : word_end[w]);
    }
  }
  return doc;
}

std::vector<SquadFeature> featurize_squad(std::span<const SquadExample> examples,
                                          const SquadTokenizer& tokenizer,
                                          const SquadFeatureOptions& options) {
  ELECTRA_USER_CHECK(options.doc_stride > 0, "SQuAD doc_stride must be positive, got ",
                     options.doc_stride);
  ELECTRA_USER_CHECK(options.max_query_len > 0 && options.max_seq_len > options.max_query_len + 3,
                     "SQuAD max_seq_len (", options.max_seq_len, ") must exceed max_query_len (",
                     options.max_query_len, ") + 3");
  std::vector<SquadFeature> features;
  for (size_t e = 0; e < examples.size(); ++e) {
    const SquadExample& ex = examples[e];
    std::vector<int32_t> query = tokenize_text(ex.question, tokenizer.wordpiece);
    if (query.size() > static_cast<size_t>(options.max_query_len)) {
      query.resize(options.max_query_len);
    }
    const SquadDocTokens doc = tokenize_document(ex, tokenizer.wordpiece);
    const auto n_doc = static_cast<int32_t>(doc.ids.size());

    // The answer's sub-token span in the whole document (-1 when there is none).
    int32_t tok_start = -1, tok_end = -1;
    if (!ex.is_impossible && ex.start_word >= 0) {
      tok_start = doc.word_start[ex.start_word];
      tok_end = ex.end_word + 1 < static_cast<int32_t>(ex.doc_tokens().size())
                    ? doc.word_start[ex.end_word + 1] - 1
                    : n_doc - 1;
      std::tie(tok_start, tok_end) = improve_answer_span(
          doc.ids, tok_start, tok_end, tokenize_text(ex.answers.front().text, tokenizer.wordpiece));
      if (tok_end < tok_start) tok_start = tok_end = -1;  // the answer's words have no sub-token
    }

    const int32_t max_doc = options.max_seq_len - static_cast<int32_t>(query.size()) - 3;
    std::vector<DocSpan> spans;
    for (int32_t start = 0; start < n_doc;) {
      const int32_t length = std::min(n_doc - start, max_doc);
      spans.push_back({start, length});
      if (start + length == n_doc) break;
      start += std::min(length, options.doc_stride);
    }

    for (size_t s = 0; s < spans.size(); ++s) {
      SquadFeature f;
      f.example_index = static_cast<int32_t>(e);
      f.span_index = static_cast<int32_t>(s);
      f.doc_offset = static_cast<int32_t>(query.size()) + 2;
      f.doc_start = spans[s].start;
      f.input_ids.push_back(tokenizer.cls_id);
      f.input_ids.insert(f.input_ids.end(), query.begin(), query.end());
      f.input_ids.push_back(tokenizer.sep_id);
      f.token_to_orig_map.assign(f.input_ids.size(), -1);
      f.token_is_max_context.assign(f.input_ids.size(), 0);
      for (int32_t i = 0; i < spans[s].length; ++i) {
        const int32_t t = spans[s].start + i;
        f.input_ids.push_back(doc.ids[t]);
        f.token_to_orig_map.push_back(doc.to_word[t]);
        f.token_is_max_context.push_back(is_max_context(spans, s, t) ? 1 : 0);
      }
      f.input_ids.push_back(tokenizer.sep_id);
      f.token_to_orig_map.push_back(-1);
      f.token_is_max_context.push_back(0);
      const int32_t doc_end = spans[s].start + spans[s].length - 1;
      if (tok_start >= 0 && tok_start >= spans[s].start && tok_end <= doc_end) {
        f.start_position = tok_start - spans[s].start + f.doc_offset;
        f.end_position = tok_end - spans[s].start + f.doc_offset;
      }
      features.push_back(std::move(f));
    }
  }
  return features;
}

}  // namespace electra
