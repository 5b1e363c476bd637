// electra build-data: text -> tokenized pre-training shards (data/data_builder.h).
#include <cstdio>
#include <string>
#include <vector>

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

uint64_t parse_count(const std::string& flag, const std::string& value) {
  size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  ELECTRA_USER_CHECK(used == value.size() && !value.empty() && value[0] != '-', flag,
                     " expects a non-negative integer, got '", value, "'");
  return n;
}

}  // namespace

int cmd_build_data(const std::vector<std::string>& args) {
  data::BuildDataOptions options;
  std::string vocab_path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      ELECTRA_USER_CHECK(i + 1 < args.size(), a,
                         " needs a value (see 'electra build-data --help')");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a == "--input") {
      options.inputs.push_back(value());
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
        options.inputs.push_back(args[++i]);
      }
    } else if (a == "--vocab") {
      vocab_path = value();
    } else if (a == "--output") {
      options.output_dir = value();
    } else if (a == "--seq-len") {
      const uint64_t n = parse_count(a, value());
      ELECTRA_USER_CHECK(n >= 8 && n <= 65536, "--seq-len must be in [8, 65536], got ", n);
      options.seq_len = static_cast<uint32_t>(n);
    } else if (a == "--threads") {
      options.threads = static_cast<unsigned>(parse_count(a, value()));
    } else if (a == "--seed") {
      options.seed = parse_count(a, value());
    } else if (a == "--docs-per-shard") {
      options.docs_per_shard = parse_count(a, value());
    } else if (a == "--lowercase") {
      options.lowercase = true;
    } else if (a == "--no-lowercase") {
      options.lowercase = false;
    } else {
      ELECTRA_USER_CHECK(false, "unknown argument '", a, "' (see 'electra build-data --help')");
    }
  }
  ELECTRA_USER_CHECK(!options.inputs.empty(),
                     "--input is required (see 'electra build-data --help')");
  ELECTRA_USER_CHECK(!vocab_path.empty(), "--vocab is required (see 'electra build-data --help')");
  ELECTRA_USER_CHECK(!options.output_dir.empty(),
                     "--output is required (see 'electra build-data --help')");
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
