// The BERT tokenizer: BasicTokenizer + WordPiece over a Vocab, giving the ids HF's BertTokenizer
// (do_lower_case=True, tokenize_chinese_chars=True) gives for the same vocab.txt.
//
// A Tokenizer holds scratch buffers and is not shared between threads: give each thread its own
// (they may share the Vocab, which is read-only).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "data/basic_tokenizer.h"
#include "data/vocab.h"

namespace electra::data {

// [CLS] a [SEP] b [SEP]: segment 0 up to and including the first [SEP], 1 after it.
struct PairEncoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> segment_ids;
};

class Tokenizer {
 public:
  // Keeps a reference to `vocab`, which must outlive the Tokenizer.
  explicit Tokenizer(const Vocab& vocab, bool lowercase = true);

  // Appends the ids of `text` (no special tokens) to `ids`.
  void encode(std::string_view text, std::vector<int32_t>& ids);
  std::vector<int32_t> encode(std::string_view text);

  // [CLS] a [SEP] b [SEP], at most max_len (>= 3) ids. Truncation is HF tokenizers' longest_first
  // (TruncationStrategy::LongestFirst): with budget m = max_len - 3 and s <= l the lengths of the
  // shorter and the longer side (a counts as the shorter on a tie), nothing is cut when s + l <= m;
  // else, when 2s <= m, the longer side is cut to m - s; else the shorter keeps m / 2 and the
  // longer m - m / 2 tokens. Each side keeps its first tokens.
  PairEncoding encode_pair(std::string_view a, std::string_view b, size_t max_len);
  // [CLS] a [SEP] (all segment 0), a keeping its first max_len - 2 tokens (max_len >= 2).
  PairEncoding encode_single(std::string_view a, size_t max_len);

  // Ill-formed UTF-8 sequences met so far (each replaced by U+FFFD, then dropped).
  uint64_t invalid_utf8() const { return invalid_utf8_; }
  const Vocab& vocab() const { return vocab_; }

 private:
  const Vocab& vocab_;
  BasicTokenizer basic_;
  WordList words_;
  uint64_t invalid_utf8_ = 0;
};

}  // namespace electra::data
