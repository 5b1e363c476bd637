#include "data/token_table.h"

#include <cstring>

#include "engine/error.h"

namespace electra::data {

uint64_t TokenTable::hash(std::string_view key) {
  uint64_t h = 0xCBF29CE484222325ull ^ key.size();
  size_t i = 0;
  for (; i + 8 <= key.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, key.data() + i, 8);
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, key.data() + i, key.size() - i);
  h = (h ^ tail) * 0x100000001B3ull;
  // murmur3's fmix64: spreads every input bit over the low bits used as the slot index.
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

void TokenTable::build(const std::vector<std::pair<std::string_view, int32_t>>& entries) {
  size_t capacity = 16;
  while (capacity < 2 * entries.size()) capacity *= 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (const auto& [key, id] : entries) {
    ELECTRA_CHECK(id >= 0, "token ids must be >= 0, got ", id);
    const uint64_t h = hash(key);
    size_t i = h & mask_;
    while (slots_[i].id >= 0) {
      ELECTRA_CHECK(slots_[i].key != key, "duplicate key '", key, "'");
      i = (i + 1) & mask_;
    }
    slots_[i] = Slot{h, key, id};
  }
}

}  // namespace electra::data
