#include "data/pretrain_batches.h"

#include "data/shard.h"
#include "engine/error.h"

namespace electra::data {

PretrainBatches::PretrainBatches(const ShardSet& shards, uint64_t seed)
    : shards_(shards), order_(shards.size(), seed) {}

void PretrainBatches::next(size_t batch, DataCursor& cursor, std::span<int32_t> ids,
                           std::span<int32_t> segment_ids) {
  const size_t t = seq_len();
  ELECTRA_CHECK(ids.size() == batch * t && segment_ids.size() == batch * t,
                "PretrainBatches::next: buffers of ", ids.size(), " and ", segment_ids.size(),
                " for ", batch, " x ", t);
  const uint16_t sep = shards_.header().sep_id;
  for (size_t b = 0; b < batch; ++b) {
    const std::span<const uint16_t> tokens = shards_.example(order_.next(cursor));
    for (size_t i = 0; i < t; ++i) ids[b * t + i] = tokens[i];
    segment_ids_from_tokens(tokens, sep, segment_ids.subspan(b * t, t));
  }
}

}  // namespace electra::data
