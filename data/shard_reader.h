// Read side of the shard format (shard.h): memory-mapped shards, validated on open, presented as
// one array of examples in file order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/shard.h"

namespace electra::data {

// One mapped shard. Opening checks magic, version, header checksum, the file size against
// example_count x seq_len and the payload checksum; each failure is a UserError naming the file
// and what is wrong.
class ShardFile {
 public:
  explicit ShardFile(const std::string& path);
  ~ShardFile();
  ShardFile(ShardFile&& other) noexcept;
  ShardFile& operator=(ShardFile&&) = delete;
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  const ShardHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  uint64_t size() const { return header_.example_count; }
  // The seq_len token ids of example i (< size()).
  std::span<const uint16_t> example(uint64_t i) const;

 private:
  std::string path_;
  ShardHeader header_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
};

// The shard files named, and for each directory named the shards of its manifest
// (shard_manifest.h). Throws UserError for a missing path, a directory without a complete
// manifest, or when no shard is found.
std::vector<std::string> expand_shard_inputs(const std::vector<std::string>& paths);

// Several shards as one sequence of examples (shard order, then example order).
class ShardSet {
 public:
  // Opens every shard. When expected_vocab_hash / expected_seq_len are given (non-zero), a shard
  // with another value is refused: UserError naming the file and both values. Shards must agree
  // with each other in any case.
  explicit ShardSet(const std::vector<std::string>& paths, uint64_t expected_vocab_hash = 0,
                    uint32_t expected_seq_len = 0);

  uint64_t size() const { return offsets_.empty() ? 0 : offsets_.back(); }
  uint32_t seq_len() const { return shards_.front().header().seq_len; }
  const ShardHeader& header() const { return shards_.front().header(); }
  const std::vector<ShardFile>& shards() const { return shards_; }
  // Example i of the concatenation (i < size()).
  std::span<const uint16_t> example(uint64_t i) const;

 private:
  std::vector<ShardFile> shards_;
  std::vector<uint64_t> offsets_;  // offsets_[k] = examples in shards before k+1
};

struct ShardStats {
  uint64_t examples = 0;
  uint64_t positions = 0;       // examples x seq_len
  uint64_t tokens = 0;          // real tokens, [CLS]/[SEP] included
  uint64_t single_segment = 0;  // examples with one [SEP]
  double padding_fraction() const;
  double mean_length() const;
  double single_segment_fraction() const;
  void add(const ShardStats& other);
};

// Statistics over every example of a shard.
ShardStats shard_stats(const ShardFile& shard);

}  // namespace electra::data
