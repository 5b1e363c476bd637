// Fuzz harness: the shard reader (data/shard_reader.h): header checks, size and checksum, then
// statistics over every example and the segment ids of the first (what `electra info` and a
// training run do with a shard).
#include <vector>

#include "data/shard_reader.h"
#include "engine/error.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = electra::fuzz::write_input(data, size, ".bin");
  try {
    const electra::data::ShardFile shard(path);
    electra::data::shard_stats(shard);
    if (shard.size() > 0) {
      const auto tokens = shard.example(0);
      std::vector<int32_t> segments(tokens.size());
      electra::data::segment_ids_from_tokens(tokens, shard.header().sep_id, segments);
    }
  } catch (const electra::UserError&) {
  }
  return 0;
}
