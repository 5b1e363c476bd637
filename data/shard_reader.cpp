#include "data/shard_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "data/fnv.h"
#include "data/shard_manifest.h"
#include "engine/error.h"
#include "engine/input_file.h"

namespace electra::data {
namespace fs = std::filesystem;

ShardFile::ShardFile(const std::string& path) : path_(path) {
  require_regular_file(path, "shard file");
  const int fd = ::open(path.c_str(), O_RDONLY);
  ELECTRA_USER_CHECK(fd >= 0, "cannot open shard '", path, "': ", std::strerror(errno));
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  map_bytes_ = stat_ok ? static_cast<size_t>(st.st_size) : 0;
  if (map_bytes_ > 0) {
    map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  const int map_errno = errno;
  ::close(fd);
  ELECTRA_USER_CHECK(stat_ok, "cannot stat shard '", path, "'");
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    ELECTRA_USER_CHECK(false, "cannot mmap shard '", path, "': ", std::strerror(map_errno));
  }
  // From here a throw must unmap: the destructor does not run for a half-built object.
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    header_ = decode_shard_header(bytes, map_bytes_, path);
    // example_count and seq_len come from the file: the payload size is computed without
    // wrapping (a count of 2^56 + k must not pass as a small file).
    const uint64_t record_bytes = uint64_t{header_.seq_len} * sizeof(uint16_t);
    uint64_t payload = 0;
    const bool fits = !__builtin_mul_overflow(header_.example_count, record_bytes, &payload) &&
                      payload <= UINT64_MAX - kShardHeaderBytes;
    ELECTRA_USER_CHECK(fits && map_bytes_ - kShardHeaderBytes == payload, "shard '", path, "' is ",
                       !fits || map_bytes_ < kShardHeaderBytes + payload ? "truncated" : "too long",
                       ": ", map_bytes_, " bytes, expected ",
                       fits ? str_cat(kShardHeaderBytes + payload) : std::string("more than 2^64"),
                       " for ", header_.example_count, " examples of ", header_.seq_len, " tokens");
    ELECTRA_USER_CHECK(fnv1a64(bytes + kShardHeaderBytes, payload) == header_.payload_checksum,
                       "shard '", path, "' is corrupted (payload checksum mismatch)");
  } catch (...) {
    if (map_ != nullptr) ::munmap(map_, map_bytes_);
    throw;
  }
}

ShardFile::ShardFile(ShardFile&& other) noexcept
    : path_(std::move(other.path_)),
      header_(other.header_),
      map_(other.map_),
      map_bytes_(other.map_bytes_) {
  other.map_ = nullptr;
  other.map_bytes_ = 0;
}

ShardFile::~ShardFile() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

std::span<const uint16_t> ShardFile::example(uint64_t i) const {
  ELECTRA_CHECK(i < header_.example_count, "example ", i, " out of range: shard '", path_, "' has ",
                header_.example_count);
  const auto* tokens = reinterpret_cast<const uint16_t*>(static_cast<const unsigned char*>(map_) +
                                                         kShardHeaderBytes);
  return {tokens + i * header_.seq_len, header_.seq_len};
}

std::vector<std::string> expand_shard_inputs(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    ELECTRA_USER_CHECK(!ec && fs::exists(st), "shard path '", p, "' does not exist");
    if (!fs::is_directory(st)) {
      files.push_back(p);
      continue;
    }
    const std::vector<std::string> found = read_shard_manifest(p);
    files.insert(files.end(), found.begin(), found.end());
  }
  ELECTRA_USER_CHECK(!files.empty(), "no shard files given");
  return files;
}

ShardSet::ShardSet(const std::vector<std::string>& paths, uint64_t expected_vocab_hash,
                   uint32_t expected_seq_len) {
  ELECTRA_USER_CHECK(!paths.empty(), "no shard files given");
  uint64_t total = 0;
  for (const auto& path : paths) {
    ShardFile shard(path);
    const ShardHeader& h = shard.header();
    // Compare with the run's values, or else with the first shard's.
    const bool first = shards_.empty();
    const uint64_t want_hash = expected_vocab_hash != 0 ? expected_vocab_hash
                               : first                  ? h.vocab_hash
                                                        : header().vocab_hash;
    const uint32_t want_len = expected_seq_len != 0 ? expected_seq_len
                              : first               ? h.seq_len
                                                    : header().seq_len;
    const std::string other = expected_vocab_hash != 0 || expected_seq_len != 0 || first
                                  ? std::string("this run uses")
                                  : "shard '" + shards_.front().path() + "' has";
    char got_hash[17], want[17];
    std::snprintf(got_hash, sizeof got_hash, "%016llx",
                  static_cast<unsigned long long>(h.vocab_hash));
    std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(want_hash));
    ELECTRA_USER_CHECK(h.vocab_hash == want_hash, "shard '", path, "' was built with vocabulary ",
                       got_hash, ", but ", other, " vocabulary ", want,
                       " (rebuild the data with the run's vocab.txt)");
    ELECTRA_USER_CHECK(h.seq_len == want_len, "shard '", path, "' has seq_len ", h.seq_len,
                       ", but ", other, " seq_len ", want_len);
    total += shard.size();
    shards_.push_back(std::move(shard));
    offsets_.push_back(total);
  }
}

std::span<const uint16_t> ShardSet::example(uint64_t i) const {
  ELECTRA_CHECK(i < size(), "example ", i, " out of range: the shards hold ", size());
  const size_t k =
      static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), i) - offsets_.begin());
  return shards_[k].example(i - (k == 0 ? 0 : offsets_[k - 1]));
}

double ShardStats::padding_fraction() const {
  return positions == 0 ? 0.0 : 1.0 - static_cast<double>(tokens) / static_cast<double>(positions);
}
double ShardStats::mean_length() const {
  return examples == 0 ? 0.0 : static_cast<double>(tokens) / static_cast<double>(examples);
}
double ShardStats::single_segment_fraction() const {
  return examples == 0 ? 0.0 : static_cast<double>(single_segment) / static_cast<double>(examples);
}

void ShardStats::add(const ShardStats& other) {
  examples += other.examples;
  positions += other.positions;
  tokens += other.tokens;
  single_segment += other.single_segment;
}

ShardStats shard_stats(const ShardFile& shard) {
  ShardStats s;
  const uint16_t sep = shard.header().sep_id;
  for (uint64_t i = 0; i < shard.size(); ++i) {
    const auto tokens = shard.example(i);
    s.tokens += record_length(tokens, sep);
    s.single_segment += std::count(tokens.begin(), tokens.end(), sep) == 1;
    ++s.examples;
    s.positions += tokens.size();
  }
  return s;
}

}  // namespace electra::data
