// manifest.json of a shard directory: what `electra build-data` wrote, written last (atomically)
// so that a directory whose build was killed midway has none and is refused:
//   {"format": "electra-shards", "examples": N,
//    "shards": [{"name": "shard-00000.bin", "bytes": B, "examples": n, "checksum": "<hex>"}, ...]}
// Reading a directory checks that its *.bin files are exactly the manifest's, with their sizes
// (each shard's checksums are verified when it is opened, shard_reader.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace electra::data {

inline constexpr const char* kShardManifest = "manifest.json";

struct ManifestEntry {
  std::string name;  // file name within the directory
  uint64_t bytes = 0;
  uint64_t examples = 0;
  uint64_t checksum = 0;  // the header's payload checksum
};

// Writes <dir>/manifest.json atomically; throws UserError naming it when that fails.
void write_shard_manifest(const std::string& dir, const std::vector<ManifestEntry>& shards);

// The shard paths of a directory in manifest order. Throws UserError naming the directory when
// manifest.json is missing (an incomplete build) or malformed, or disagrees with the *.bin files.
std::vector<std::string> read_shard_manifest(const std::string& dir);

}  // namespace electra::data
