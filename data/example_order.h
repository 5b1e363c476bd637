// The order in which a training run reads examples: a fresh permutation of all N examples every
// epoch (Fisher-Yates driven by Philox, stream (seed, kDataOrder, step = epoch)), read front to
// back, epoch after epoch. The position is a DataCursor (epoch, index within the epoch), which a
// checkpoint saves: restoring it continues with exactly the same sequence.
//
// Data-parallel runs (docs/DISTRIBUTED.md) split each update, not the data set: every rank holds
// the same cursor (where the update starts); with a global batch of n ranks x a micro-batches x
// b examples, rank r skips r x a x b examples (advance()), reads its a micro-batches, and the
// update's cursor then moves by n x a x b. Rank r's micro-batch m is thus exactly micro-batch
// r x a + m of a single process that accumulates n x a micro-batches of b (which is what makes
// n ranks compute the same update as one process), the ranks read disjoint slices of the data,
// and the saved cursor does not depend on the number of ranks (a run resumes on any number).
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
  // 0 < num_examples < 2^32.
  ExampleOrder(uint64_t num_examples, uint64_t seed);

  uint64_t size() const { return num_examples_; }
  // The example index at `cursor`, then advances the cursor (into the next epoch at the end).
  uint64_t next(DataCursor& cursor);
  // Moves the cursor `count` examples on (across epochs), as `count` calls of next() would.
  void advance(DataCursor& cursor, uint64_t count) const;
  // The full permutation of epoch `epoch` (cached: the last one computed is kept).
  const std::vector<uint32_t>& permutation(uint64_t epoch);

 private:
  uint64_t num_examples_;
  uint64_t seed_;
  uint64_t cached_epoch_ = UINT64_MAX;
  std::vector<uint32_t> perm_;
};

}  // namespace electra::data
