#include "data/shard_manifest.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/error.h"
#include "engine/input_file.h"
#include "engine/safetensors.h"

namespace electra::data {
namespace fs = std::filesystem;

void write_shard_manifest(const std::string& dir, const std::vector<ManifestEntry>& shards) {
  nlohmann::json list = nlohmann::json::array();
  uint64_t examples = 0;
  for (const ManifestEntry& s : shards) {
    char checksum[17];
    std::snprintf(checksum, sizeof checksum, "%016llx",
                  static_cast<unsigned long long>(s.checksum));
    list.push_back(
        {{"name", s.name}, {"bytes", s.bytes}, {"examples", s.examples}, {"checksum", checksum}});
    examples += s.examples;
  }
  const nlohmann::json j = {{"format", "electra-shards"}, {"examples", examples}, {"shards", list}};
  write_file_atomic((fs::path(dir) / kShardManifest).string(), j.dump(2) + "\n");
}

std::vector<std::string> read_shard_manifest(const std::string& dir) {
  const std::string path = (fs::path(dir) / kShardManifest).string();
  ELECTRA_USER_CHECK(fs::exists(path), dir, ": no ", kShardManifest,
                     ": not a complete `electra build-data` output (was the build killed?); "
                     "build the data again");
  require_regular_file(path, "shard manifest");
  std::vector<std::string> files;
  std::set<std::string> listed;
  try {
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    ELECTRA_USER_CHECK(j.value("format", "") == "electra-shards", path,
                       ": not a shard manifest (format is not \"electra-shards\")");
    for (const nlohmann::json& s : j.at("shards")) {
      const std::string name = s.at("name").get<std::string>();
      ELECTRA_USER_CHECK(fs::path(name).filename() == name && listed.insert(name).second, path,
                         ": bad or repeated shard name '", name, "'");
      const fs::path file = fs::path(dir) / name;
      std::error_code ec;
      const uintmax_t bytes = fs::file_size(file, ec);
      ELECTRA_USER_CHECK(!ec, path, ": lists ", name, ", which is missing (", ec.message(), ")");
      ELECTRA_USER_CHECK(bytes == s.at("bytes").get<uint64_t>(), path, ": ", name, " has ", bytes,
                         " bytes, the manifest says ", s.at("bytes").get<uint64_t>());
      files.push_back(file.string());
    }
  } catch (const nlohmann::json::exception& e) {
    throw UserError(str_cat(path, ": malformed shard manifest: ", e.what()));
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    ELECTRA_USER_CHECK(entry.path().extension() != ".bin" || listed.count(name) != 0, dir, ": ",
                       name, " is not in ", kShardManifest,
                       " (added after the build? build-data writes a new directory)");
  }
  ELECTRA_USER_CHECK(!files.empty(), path, ": lists no shard");
  return files;
}

}  // namespace electra::data
