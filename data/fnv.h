// FNV-1a, 64 bits (Fowler/Noll/Vo): the content hash that ties shards to their vocabulary and the
// checksum of shard payloads. Not cryptographic; it detects accidental change, not tampering.
#pragma once

#include <cstddef>
#include <cstdint>

namespace electra::data {

constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001B3ull;

// Continues a hash over more bytes: fnv1a64(b, fnv1a64(a)) == fnv1a64(a + b).
inline uint64_t fnv1a64(const void* data, size_t size, uint64_t hash = kFnvOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= kFnvPrime;
  }
  return hash;
}

}  // namespace electra::data
