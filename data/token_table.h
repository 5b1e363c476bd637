// An open-addressing hash table from token text to id, built once and then read-only: the lookup
// behind every WordPiece step, so it avoids std::unordered_map's node chasing. Keys are views into
// storage the caller keeps alive (the Vocab's token strings).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace electra::data {

class TokenTable {
 public:
  // Keys must be unique; capacity is a power of two >= 2 x keys (load factor <= 0.5).
  void build(const std::vector<std::pair<std::string_view, int32_t>>& entries);

  // The id of `key`, or -1.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == h && s.key == key) return s.id;
    }
  }

  // A fast 64-bit hash of short strings (FNV-1a over 8-byte words, then a final avalanche).
  static uint64_t hash(std::string_view key);

 private:
  struct Slot {
    uint64_t hash = 0;
    std::string_view key;
    int32_t id = -1;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace electra::data
