#include "data/shard.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "data/fnv.h"
#include "engine/error.h"

namespace electra::data {

static_assert(std::endian::native == std::endian::little, "shards are little-endian");

namespace {

template <class T>
void put(unsigned char* out, size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(T));
}
template <class T>
T get(const unsigned char* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

}  // namespace

void encode_shard_header(const ShardHeader& h, unsigned char out[kShardHeaderBytes]) {
  std::memset(out, 0, kShardHeaderBytes);
  std::memcpy(out, kShardMagic, 8);
  put<uint32_t>(out, 8, h.version);
  put<uint32_t>(out, 12, kShardHeaderBytes);
  put<uint32_t>(out, 16, h.seq_len);
  put<uint32_t>(out, 20, h.vocab_size);
  put<uint64_t>(out, 24, h.vocab_hash);
  put<uint64_t>(out, 32, h.example_count);
  put<uint64_t>(out, 40, h.payload_checksum);
  put<uint16_t>(out, 48, h.pad_id);
  put<uint16_t>(out, 50, h.cls_id);
  put<uint16_t>(out, 52, h.sep_id);
  put<uint16_t>(out, 54, h.mask_id);
  put<uint64_t>(out, 56, fnv1a64(out, 56));
}

ShardHeader decode_shard_header(const unsigned char* bytes, size_t size, const std::string& path) {
  ELECTRA_USER_CHECK(size >= kShardHeaderBytes, "shard '", path, "' is truncated: ", size,
                     " bytes, shorter than its ", kShardHeaderBytes, "-byte header");
  ELECTRA_USER_CHECK(std::memcmp(bytes, kShardMagic, 8) == 0, "'", path,
                     "' is not an electra shard (bad magic)");
  ShardHeader h;
  h.version = get<uint32_t>(bytes, 8);
  ELECTRA_USER_CHECK(h.version == kShardVersion, "shard '", path, "' has format version ",
                     h.version, "; this build reads version ", kShardVersion);
  const auto header_bytes = get<uint32_t>(bytes, 12);
  ELECTRA_USER_CHECK(header_bytes == kShardHeaderBytes, "shard '", path, "' has header size ",
                     header_bytes, ", expected ", kShardHeaderBytes);
  ELECTRA_USER_CHECK(get<uint64_t>(bytes, 56) == fnv1a64(bytes, 56), "shard '", path,
                     "' has a corrupted header (header checksum mismatch)");
  h.seq_len = get<uint32_t>(bytes, 16);
  h.vocab_size = get<uint32_t>(bytes, 20);
  h.vocab_hash = get<uint64_t>(bytes, 24);
  h.example_count = get<uint64_t>(bytes, 32);
  h.payload_checksum = get<uint64_t>(bytes, 40);
  h.pad_id = get<uint16_t>(bytes, 48);
  h.cls_id = get<uint16_t>(bytes, 50);
  h.sep_id = get<uint16_t>(bytes, 52);
  h.mask_id = get<uint16_t>(bytes, 54);
  ELECTRA_USER_CHECK(h.seq_len > 0, "shard '", path, "' has seq_len 0");
  return h;
}

void segment_ids_from_tokens(std::span<const uint16_t> tokens, uint16_t sep_id,
                             std::span<int32_t> segment_ids) {
  ELECTRA_CHECK(segment_ids.size() == tokens.size(), "segment_ids has ", segment_ids.size(),
                " entries for ", tokens.size(), " tokens");
  const size_t length = record_length(tokens, sep_id);
  int seps = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    segment_ids[i] = seps == 1 && i < length ? 1 : 0;
    if (tokens[i] == sep_id) ++seps;
  }
}

size_t record_length(std::span<const uint16_t> tokens, uint16_t sep_id) {
  for (size_t i = tokens.size(); i > 0; --i) {
    if (tokens[i - 1] == sep_id) return i;
  }
  return 0;
}

ShardWriter::ShardWriter(const std::string& path, const ShardHeader& header)
    : path_(path), tmp_path_(path + ".tmp"), header_(header) {
  ELECTRA_CHECK(header.seq_len > 0, "shard seq_len must be > 0");
  header_.example_count = 0;
  header_.payload_checksum = kFnvOffset;
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  ELECTRA_USER_CHECK(file_ != nullptr, "cannot create '", tmp_path_, "': ", std::strerror(errno));
  unsigned char placeholder[kShardHeaderBytes] = {};
  ELECTRA_USER_CHECK(std::fwrite(placeholder, 1, kShardHeaderBytes, file_) == kShardHeaderBytes,
                     "error writing '", tmp_path_, "'");
}

ShardWriter::~ShardWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(tmp_path_.c_str());
  }
}

void ShardWriter::add(std::span<const uint16_t> tokens) {
  ELECTRA_CHECK(tokens.size() % header_.seq_len == 0, "ShardWriter::add got ", tokens.size(),
                " tokens, not a multiple of seq_len ", header_.seq_len);
  const size_t bytes = tokens.size_bytes();
  header_.payload_checksum = fnv1a64(tokens.data(), bytes, header_.payload_checksum);
  header_.example_count += tokens.size() / header_.seq_len;
  ELECTRA_USER_CHECK(std::fwrite(tokens.data(), 1, bytes, file_) == bytes, "error writing '",
                     tmp_path_, "': ", std::strerror(errno));
}

void ShardWriter::finish() {
  ELECTRA_CHECK(file_ != nullptr, "ShardWriter::finish called twice for ", path_);
  unsigned char header[kShardHeaderBytes];
  encode_shard_header(header_, header);
  const bool ok = std::fseek(file_, 0, SEEK_SET) == 0 &&
                  std::fwrite(header, 1, kShardHeaderBytes, file_) == kShardHeaderBytes;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) std::remove(tmp_path_.c_str());
  ELECTRA_USER_CHECK(ok && closed, "error writing '", tmp_path_, "'");
  std::error_code ec;
  std::filesystem::rename(tmp_path_, path_, ec);
  ELECTRA_USER_CHECK(!ec, "cannot rename '", tmp_path_, "' to '", path_, "': ", ec.message());
}

}  // namespace electra::data
