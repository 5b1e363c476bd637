#include "data/wordpiece.h"

#include <algorithm>

namespace electra::data {
namespace {

inline bool is_continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

}  // namespace

void wordpiece_encode(const Vocab& vocab, std::string_view word, std::vector<int32_t>& ids) {
  const size_t n = word.size();
  if (n > kMaxWordChars) {
    const auto chars = static_cast<size_t>(
        std::count_if(word.begin(), word.end(), [](char c) { return !is_continuation_byte(c); }));
    if (chars > kMaxWordChars) {
      ids.push_back(vocab.unk_id());
      return;
    }
  }
  const size_t first = ids.size();
  const size_t max_piece = vocab.max_piece_bytes();
  size_t start = 0;
  while (start < n) {
    // Longer candidates than the longest vocabulary piece cannot match: start below them, on a
    // character boundary.
    size_t end = std::min(n, start + max_piece);
    while (end > start && end < n && is_continuation_byte(word[end])) --end;
    int32_t id = -1;
    while (end > start) {
      const std::string_view piece = word.substr(start, end - start);
      id = start == 0 ? vocab.find_initial(piece) : vocab.find_continuation(piece);
      if (id >= 0) break;
      do {
        --end;
      } while (end > start && is_continuation_byte(word[end]));
    }
    if (id < 0) {
      ids.resize(first);
      ids.push_back(vocab.unk_id());
      return;
    }
    ids.push_back(id);
    start = end;
  }
}

}  // namespace electra::data
