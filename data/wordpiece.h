// Greedy longest-match-first WordPiece (BERT's WordpieceTokenizer): a word is split into the
// longest vocabulary prefix, then repeatedly the longest "##"-continuation of the rest. A word
// that cannot be split completely, or that has more than kMaxWordChars characters, is one [UNK].
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "data/vocab.h"

namespace electra::data {

inline constexpr size_t kMaxWordChars = 100;

// Appends the ids of one (basic-tokenized, non-empty) word to `ids`.
void wordpiece_encode(const Vocab& vocab, std::string_view word, std::vector<int32_t>& ids);

}  // namespace electra::data
