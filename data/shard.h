// Binary shards of pre-training examples, written by `electra build-data`, read by mmap.
//
// Layout (little-endian):
//   offset size  field
//        0    8  magic "ELECTRA1"
//        8    4  format version (kShardVersion)
//       12    4  header size in bytes (64)
//       16    4  seq_len: tokens per example
//       20    4  vocab_size
//       24    8  vocab_hash (Vocab::hash(), FNV-1a 64 of vocab.txt)
//       32    8  example_count
//       40    8  payload_checksum: FNV-1a 64 of the payload bytes
//       48    2  pad_id, 50: cls_id, 52: sep_id, 54: mask_id (uint16 each)
//       56    8  header_checksum: FNV-1a 64 of bytes [0, 56)
//       64       payload: example_count records of seq_len uint16 token ids
// A record is [CLS] A [SEP] (B [SEP]) then pad_id up to seq_len. Segment ids are not stored: they
// follow from the [SEP] positions (segment_ids_from_tokens), because the tokenizer never produces
// [SEP] from text. The file is written to "<path>.tmp" and renamed when complete.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace electra::data {

inline constexpr char kShardMagic[8] = {'E', 'L', 'E', 'C', 'T', 'R', 'A', '1'};
inline constexpr uint32_t kShardVersion = 1;
inline constexpr uint32_t kShardHeaderBytes = 64;

struct ShardHeader {
  uint32_t version = kShardVersion;
  uint32_t seq_len = 0;
  uint32_t vocab_size = 0;
  uint64_t vocab_hash = 0;
  uint64_t example_count = 0;
  uint64_t payload_checksum = 0;
  uint16_t pad_id = 0, cls_id = 0, sep_id = 0, mask_id = 0;
};

// The 64 header bytes of `h` (checksum included).
void encode_shard_header(const ShardHeader& h, unsigned char out[kShardHeaderBytes]);
// Parses and checks magic, version, header size and header checksum; throws UserError naming
// `path` and what is wrong.
ShardHeader decode_shard_header(const unsigned char* bytes, size_t size, const std::string& path);

// Segment id of each position of a record: 0 up to and including the first [SEP], 1 up to and
// including the second, 0 on padding (as the official builder's segment_ids).
void segment_ids_from_tokens(std::span<const uint16_t> tokens, uint16_t sep_id,
                             std::span<int32_t> segment_ids);

// The number of real (non-padding) tokens of a record: one past its last [SEP].
size_t record_length(std::span<const uint16_t> tokens, uint16_t sep_id);

class ShardWriter {
 public:
  // `header` gives everything except example_count and payload_checksum, which add() accumulates.
  ShardWriter(const std::string& path, const ShardHeader& header);
  ~ShardWriter();  // removes the temporary file unless finish() was called
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends records: tokens.size() must be a multiple of seq_len.
  void add(std::span<const uint16_t> tokens);
  // Writes the header, closes and renames the file into place.
  void finish();

  uint64_t example_count() const { return header_.example_count; }
  uint64_t payload_checksum() const { return header_.payload_checksum; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_path_;
  std::FILE* file_ = nullptr;
  ShardHeader header_;
};

}  // namespace electra::data
