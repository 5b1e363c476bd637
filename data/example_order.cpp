#include "data/example_order.h"

#include <numeric>
#include <utility>

#include "engine/error.h"
#include "engine/philox.h"

namespace electra::data {

ExampleOrder::ExampleOrder(uint64_t num_examples, uint64_t seed)
    : num_examples_(num_examples), seed_(seed) {
  ELECTRA_USER_CHECK(num_examples > 0, "the data has no examples");
  ELECTRA_USER_CHECK(num_examples <= UINT32_MAX, "the data has ", num_examples,
                     " examples; a run reads fewer than 2^32 (use fewer shards)");
}

const std::vector<uint32_t>& ExampleOrder::permutation(uint64_t epoch) {
  if (epoch == cached_epoch_) return perm_;
  ELECTRA_CHECK(epoch <= UINT32_MAX, "epoch ", epoch, " does not fit the RNG step counter");
  perm_.resize(num_examples_);
  std::iota(perm_.begin(), perm_.end(), 0u);
  const RngStream rng{seed_, RngPurpose::kDataOrder, static_cast<uint32_t>(epoch), 0};
  for (uint64_t i = num_examples_ - 1; i > 0; --i) {
    const uint32_t j = uniform_below(rng.bits(i), static_cast<uint32_t>(i + 1));
    std::swap(perm_[i], perm_[j]);
  }
  cached_epoch_ = epoch;
  return perm_;
}

uint64_t ExampleOrder::next(DataCursor& cursor) {
  ELECTRA_CHECK(cursor.position < num_examples_, "cursor position ", cursor.position,
                " beyond the epoch's ", num_examples_, " examples");
  const uint64_t index = permutation(cursor.epoch)[cursor.position];
  advance(cursor, 1);
  return index;
}

void ExampleOrder::advance(DataCursor& cursor, uint64_t count) const {
  ELECTRA_CHECK(cursor.position < num_examples_, "cursor position ", cursor.position,
                " beyond the epoch's ", num_examples_, " examples");
  const uint64_t remaining = num_examples_ - cursor.position;
  if (count < remaining) {
    cursor.position += count;
    return;
  }
  count -= remaining;
  cursor.epoch += 1 + count / num_examples_;
  cursor.position = count % num_examples_;
}

}  // namespace electra::data
