// BERT's BasicTokenizer, as HF's BertTokenizer computes it (the `tokenizers` BertNormalizer and
// BertPreTokenizer with clean_text, handle_chinese_chars, strip_accents = lowercase):
//   1. clean: drop U+0000, U+FFFD and every "other" character (categories Cc Cf Cs Co Cn) except
//      \t \n \r; whitespace (\t \n \r, Zs, U+2028, U+2029) separates words;
//   2. every CJK ideograph (the BERT ranges) is a word of its own;
//   3. with lowercase: NFD-decompose, drop nonspacing marks (Mn), lowercase (simple mapping, no
//      final-sigma rule: as the Rust tokenizer, unlike Python's str.lower());
//   4. every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, and Unicode P*) is a word
//      of its own.
// Ill-formed UTF-8 becomes U+FFFD per maximal subpart (as Python's errors="replace") and is then
// dropped by step 1, like HF does with U+FFFD; the number of such replacements is returned.
// Special-token strings in the text ("[SEP]") are NOT recognised: they split like any text, as in
// BERT's and ELECTRA's original tokenizer, so a [SEP] id in a shard always is a real separator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace electra::data {

// Words as one byte string plus end offsets, reused across calls so splitting allocates nothing
// once the buffers have grown.
struct WordList {
  std::string bytes;
  std::vector<uint32_t> ends;  // word i is bytes[ends[i-1] (or 0), ends[i])

  size_t size() const { return ends.size(); }
  std::string_view operator[](size_t i) const {
    const uint32_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(bytes).substr(begin, ends[i] - begin);
  }
  void clear() {
    bytes.clear();
    ends.clear();
  }
};

class BasicTokenizer {
 public:
  explicit BasicTokenizer(bool lowercase = true) : lowercase_(lowercase) {}

  // Appends the words of `text` to `out`; returns the number of ill-formed UTF-8 sequences.
  size_t split(std::string_view text, WordList& out) const;

  bool lowercase() const { return lowercase_; }

 private:
  // The slow path for one non-ASCII code point.
  void add_code_point(char32_t cp, WordList& out) const;

  bool lowercase_;
};

// True for the code points of BERT's _is_chinese_char ranges (CJK ideographs, not kana/hangul).
bool is_cjk_ideograph(char32_t cp);

// True for a line with no characters other than whitespace or removed ones: the builder's
// document separator (as Python's `not line.strip()` in the official builder).
bool is_blank_line(std::string_view line);

}  // namespace electra::data
