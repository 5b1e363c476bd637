// electra info: the header and statistics of pre-training shards.
#include <cstdio>
#include <string>
#include <vector>

#include "apps/command.h"
#include "data/shard_reader.h"
#include "engine/error.h"

namespace electra::apps {
namespace {

constexpr const char* kUsage =
    "usage: electra info SHARD_OR_DIR...\n"
    "  prints each shard's header (format, vocabulary, seq_len, examples) and statistics\n"
    "  (real tokens, padding fraction, mean length, fraction of single-segment examples)\n";

void print_stats(const char* indent, const data::ShardStats& s) {
  std::printf("%sexamples: %llu\n", indent, static_cast<unsigned long long>(s.examples));
  std::printf("%stokens: %llu (non-padding)\n", indent, static_cast<unsigned long long>(s.tokens));
  std::printf("%spadding fraction: %.4f\n", indent, s.padding_fraction());
  std::printf("%smean length: %.2f\n", indent, s.mean_length());
  std::printf("%ssingle-segment fraction: %.4f\n", indent, s.single_segment_fraction());
}

}  // namespace

int cmd_info(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
    ELECTRA_USER_CHECK(!a.starts_with("-"), "unknown argument '", a,
                       "' (see 'electra info --help')");
  }
  ELECTRA_USER_CHECK(!args.empty(),
                     "give at least one shard or directory (see 'electra info --help')");
  const auto paths = data::expand_shard_inputs(args);
  data::ShardStats total;
  for (const auto& path : paths) {
    const data::ShardFile shard(path);
    const data::ShardHeader& h = shard.header();
    std::printf("%s\n", path.c_str());
    std::printf("  format version: %u\n", h.version);
    std::printf("  seq_len: %u\n", h.seq_len);
    std::printf("  vocab size: %u, vocab hash: %016llx\n", h.vocab_size,
                static_cast<unsigned long long>(h.vocab_hash));
    std::printf("  special ids: [PAD]=%u [CLS]=%u [SEP]=%u [MASK]=%u\n", h.pad_id, h.cls_id,
                h.sep_id, h.mask_id);
    std::printf("  payload checksum: %016llx (verified)\n",
                static_cast<unsigned long long>(h.payload_checksum));
    const data::ShardStats s = data::shard_stats(shard);
    print_stats("  ", s);
    total.add(s);
  }
  if (paths.size() > 1) {
    std::printf("total (%zu shards)\n", paths.size());
    print_stats("  ", total);
  }
  return 0;
}

}  // namespace electra::apps
