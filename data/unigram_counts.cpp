#include "data/unigram_counts.h"

#include "data/shard.h"
#include "engine/error.h"

namespace electra::data {

std::vector<uint64_t> unigram_counts(const ShardSet& shards, int64_t vocab_size) {
  std::vector<uint64_t> counts(static_cast<size_t>(vocab_size), 0);
  for (const ShardFile& shard : shards.shards()) {
    const ShardHeader& h = shard.header();
    for (uint64_t i = 0; i < shard.size(); ++i) {
      const auto tokens = shard.example(i);
      const size_t length = record_length(tokens, h.sep_id);
      for (size_t k = 0; k < length; ++k) {
        const uint16_t id = tokens[k];
        if (id == h.cls_id || id == h.sep_id) continue;
        ELECTRA_USER_CHECK(id < vocab_size, shard.path(), ": example ", i, " holds token id ", id,
                           ", outside the vocabulary of ", vocab_size);
        ++counts[id];
      }
    }
  }
  return counts;
}

}  // namespace electra::data
