#include "data/tokenizer.h"

#include <algorithm>

#include "data/wordpiece.h"
#include "engine/error.h"

namespace electra::data {

Tokenizer::Tokenizer(const Vocab& vocab, bool lowercase) : vocab_(vocab), basic_(lowercase) {}

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& ids) {
  words_.clear();
  invalid_utf8_ += basic_.split(text, words_);
  for (size_t i = 0; i < words_.size(); ++i) wordpiece_encode(vocab_, words_[i], ids);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) {
  std::vector<int32_t> ids;
  encode(text, ids);
  return ids;
}

PairEncoding Tokenizer::encode_pair(std::string_view a, std::string_view b, size_t max_len) {
  ELECTRA_CHECK(max_len >= 3, "encode_pair needs max_len >= 3 for [CLS] [SEP] [SEP], got ",
                max_len);
  std::vector<int32_t> ids_a = encode(a), ids_b = encode(b);
  const size_t budget = max_len - 3;
  size_t la = ids_a.size(), lb = ids_b.size();
  if (la + lb > budget) {
    // n1 is the shorter side (a on a tie), as in tokenizers' TruncationStrategy::LongestFirst.
    const bool swap = la > lb;
    size_t n1 = swap ? lb : la, n2 = swap ? la : lb;
    n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
    if (n1 + n2 > budget) {
      n1 = budget / 2;
      n2 = n1 + budget % 2;
    }
    la = std::min(la, swap ? n2 : n1);
    lb = std::min(lb, swap ? n1 : n2);
  }
  PairEncoding enc;
  enc.ids.reserve(la + lb + 3);
  enc.ids.push_back(vocab_.cls_id());
  enc.ids.insert(enc.ids.end(), ids_a.begin(), ids_a.begin() + static_cast<ptrdiff_t>(la));
  enc.ids.push_back(vocab_.sep_id());
  enc.segment_ids.assign(enc.ids.size(), 0);
  enc.ids.insert(enc.ids.end(), ids_b.begin(), ids_b.begin() + static_cast<ptrdiff_t>(lb));
  enc.ids.push_back(vocab_.sep_id());
  enc.segment_ids.resize(enc.ids.size(), 1);
  return enc;
}

PairEncoding Tokenizer::encode_single(std::string_view a, size_t max_len) {
  ELECTRA_CHECK(max_len >= 2, "encode_single needs max_len >= 2 for [CLS] [SEP], got ", max_len);
  std::vector<int32_t> ids_a = encode(a);
  ids_a.resize(std::min(ids_a.size(), max_len - 2));
  PairEncoding enc;
  enc.ids.reserve(ids_a.size() + 2);
  enc.ids.push_back(vocab_.cls_id());
  enc.ids.insert(enc.ids.end(), ids_a.begin(), ids_a.end());
  enc.ids.push_back(vocab_.sep_id());
  enc.segment_ids.assign(enc.ids.size(), 0);
  return enc;
}

}  // namespace electra::data
