// The order in which a training run reads examples: a fresh permutation of all N examples every
// epoch (Fisher-Yates driven by Philox, stream (seed, kDataOrder, step = epoch)), shared by every
// rank; rank r of n reads permutation positions r, r + n, r + 2n, ... With a global batch of n x b
// examples, step s of rank r reads the b examples at positions s*n*b + r + n*j (j < b), so the n
// ranks together read exactly the positions a single process with batch n x b reads at step s.
// Each rank reads floor(N / n) examples per epoch (the last N mod n positions of an epoch are
// skipped so that every rank has the same number of steps).
//
// The position is a DataCursor (epoch, index within this rank's slice), which a checkpoint saves:
// restoring it continues with exactly the same sequence.
#pragma once

#include <cstdint>
#include <vector>

namespace electra::data {

struct DataCursor {
  uint64_t epoch = 0;
  uint64_t position = 0;  // index within this rank's slice of the epoch
  bool operator==(const DataCursor&) const = default;
};

class ExampleOrder {
 public:
  // num_examples >= world_size and < 2^32; rank < world_size.
  ExampleOrder(uint64_t num_examples, uint64_t seed, uint32_t rank = 0, uint32_t world_size = 1);

  // Examples this rank reads per epoch: floor(N / world_size).
  uint64_t per_rank() const { return num_examples_ / world_size_; }
  // The example index at `cursor`, then advances the cursor (into the next epoch at the end).
  uint64_t next(DataCursor& cursor);
  // The full permutation of epoch `epoch` (cached: the last one computed is kept).
  const std::vector<uint32_t>& permutation(uint64_t epoch);

 private:
  uint64_t num_examples_;
  uint64_t seed_;
  uint32_t rank_, world_size_;
  uint64_t cached_epoch_ = UINT64_MAX;
  std::vector<uint32_t> perm_;
};

}  // namespace electra::data
