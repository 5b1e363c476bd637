// The unigram distribution of a run's training data (`generator: unigram`, docs/OBJECTIVES.md):
// how often each token id occurs in the real tokens of every example of the shards, [CLS] and
// [SEP] excluded (they are never masked, so never replaced), padding excluded.
#pragma once

#include <cstdint>
#include <vector>

#include "data/shard_reader.h"

namespace electra::data {

// counts[v] for v in [0, vocab_size). UserError naming the shard and example when a token id is
// outside the vocabulary.
std::vector<uint64_t> unigram_counts(const ShardSet& shards, int64_t vocab_size);

}  // namespace electra::data
