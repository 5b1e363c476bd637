// Pre-training batches from shards: the examples ExampleOrder picks, as i32 token ids and the
// segment ids derived from their [SEP]s (shard.h), ready for the model. The position in the
// stream is a DataCursor that a checkpoint saves, so a resumed run reads the same batches.
// Data-parallel ranks read the same stream and skip() the other ranks' micro-batches
// (example_order.h).
#pragma once

#include <cstdint>
#include <span>

#include "data/example_order.h"
#include "data/shard_reader.h"

namespace electra::data {

class PretrainBatches {
 public:
  // `shards` must outlive this object.
  PretrainBatches(const ShardSet& shards, uint64_t seed);

  uint32_t seq_len() const { return shards_.seq_len(); }
  const ShardSet& shards() const { return shards_; }
  uint64_t examples_per_epoch() const { return order_.size(); }

  // Fills ids and segment_ids (each `batch` x seq_len values) with the next `batch` examples and
  // advances the cursor (into the next epoch at the end of one).
  void next(size_t batch, DataCursor& cursor, std::span<int32_t> ids,
            std::span<int32_t> segment_ids);
  // Moves the cursor past `examples` examples without reading them.
  void skip(uint64_t examples, DataCursor& cursor) const { order_.advance(cursor, examples); }

 private:
  const ShardSet& shards_;
  ExampleOrder order_;
};

}  // namespace electra::data
