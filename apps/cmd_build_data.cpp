// electra build-data: text -> tokenized pre-training shards (data/data_builder.h).
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "apps/args.h"
#include "apps/command.h"
#include "data/data_builder.h"
#include "data/vocab.h"
#include "engine/error.h"

namespace electra::apps {
namespace {

constexpr const char* kUsage =
    "usage: electra build-data --input FILE_OR_DIR... --vocab vocab.txt --output DIR\n"
    "                          [--seq-len 128] [--threads N] [--seed S] [--docs-per-shard D]\n"
    "                          [--lowercase | --no-lowercase]\n"
    "  --input           .txt / .txt.zst files or directories of them (repeatable); one paragraph\n"
    "                    per line, a blank line between documents\n"
    "  --vocab           the WordPiece vocab.txt\n"
    "  --output          directory for shard-NNNNN.bin (created; must hold no shards yet)\n"
    "  --seq-len         tokens per example (default 128)\n"
    "  --threads         worker threads (default: all cores); the output does not depend on it\n"
    "  --seed            seed of the builder's random choices (default 0)\n"
    "  --docs-per-shard  documents per shard file (default 10000)\n"
    "  --lowercase       lowercase and strip accents (the default; --no-lowercase keeps case)\n";

}  // namespace

int cmd_build_data(const std::vector<std::string>& args) {
  data::BuildDataOptions options;
  std::string vocab_path;
  ArgParser parser("build-data", kUsage);
  parser.values("--input", [&](const std::string& v) { options.inputs.push_back(v); })
      .value("--vocab", [&](const std::string& v) { vocab_path = v; })
      .value("--output", [&](const std::string& v) { options.output_dir = v; })
      .count("--seq-len",
             [&](uint64_t n) {
               ELECTRA_USER_CHECK(n >= 8 && n <= 65536, "--seq-len must be in [8, 65536], got ", n);
               options.seq_len = static_cast<uint32_t>(n);
             })
      .count("--threads",
             [&](uint64_t n) {
               // Beyond a few per core, workers only wait; thousands exhaust memory.
               const uint64_t cap = std::min<uint64_t>(
                   data::kMaxBuildThreads, 4 * std::max(1u, std::thread::hardware_concurrency()));
               if (n > cap) {
                 std::fprintf(stderr, "build-data: --threads %llu capped to %llu (4 per core)\n",
                              static_cast<unsigned long long>(n),
                              static_cast<unsigned long long>(cap));
               }
               options.threads = static_cast<unsigned>(std::min(n, cap));
             })
      .count("--seed", [&](uint64_t n) { options.seed = n; })
      .count("--docs-per-shard", [&](uint64_t n) { options.docs_per_shard = n; })
      .switch_flag("--lowercase", [&] { options.lowercase = true; })
      .switch_flag("--no-lowercase", [&] { options.lowercase = false; });
  if (!parser.parse(args)) return 0;
  parser.require(!options.inputs.empty(), "--input");
  parser.require(!vocab_path.empty(), "--vocab");
  parser.require(!options.output_dir.empty(), "--output");
  options.progress = true;

  const data::Vocab vocab = data::Vocab::load(vocab_path);
  const data::BuildDataReport r = data::build_pretraining_data(vocab, options);
  const double mb = static_cast<double>(r.text_bytes) / 1e6;
  std::fprintf(stderr,
               "build-data: %llu files, %.1f MB of text, %llu documents -> %llu examples in %zu "
               "shards in %s; %.1f s, %.1f MB/s\n",
               static_cast<unsigned long long>(r.files), mb,
               static_cast<unsigned long long>(r.documents),
               static_cast<unsigned long long>(r.examples), r.shards.size(),
               options.output_dir.c_str(), r.seconds, r.seconds > 0 ? mb / r.seconds : 0.0);
  if (r.invalid_utf8 > 0) {
    std::fprintf(stderr, "build-data: warning: %llu ill-formed UTF-8 sequences were dropped\n",
                 static_cast<unsigned long long>(r.invalid_utf8));
  }
  return 0;
}

}  // namespace electra::apps
