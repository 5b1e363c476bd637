// electra build-vocab: trains a WordPiece vocabulary from text (data/vocab_trainer.h).
#include <cstdio>
#include <string>
#include <vector>

#include "apps/command.h"
#include "data/text_reader.h"
#include "data/vocab.h"
#include "data/vocab_trainer.h"
#include "engine/error.h"
#include "engine/timer.h"

namespace electra::apps {
namespace {

constexpr const char* kUsage =
    "usage: electra build-vocab --input FILE_OR_DIR... --vocab-size N --output vocab.txt\n"
    "                           [--min-frequency K] [--unused N] [--lowercase | --no-lowercase]\n"
    "  --input          .txt / .txt.zst files or directories of them (repeatable)\n"
    "  --vocab-size     tokens in the vocabulary, special tokens included\n"
    "  --output         where to write vocab.txt (one token per line)\n"
    "  --min-frequency  a pair seen fewer times is never merged (default 2)\n"
    "  --unused         [unusedK] placeholder tokens after [PAD] (default 0)\n"
    "  --lowercase      lowercase and strip accents (the default; --no-lowercase keeps case)\n";

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

int cmd_build_vocab(const std::vector<std::string>& args) {
  std::vector<std::string> inputs;
  std::string output;
  data::VocabTrainerOptions options;
  bool have_size = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      ELECTRA_USER_CHECK(i + 1 < args.size(), a,
                         " needs a value (see 'electra build-vocab --help')");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a == "--input") {
      inputs.push_back(value());
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) inputs.push_back(args[++i]);
    } else if (a == "--vocab-size") {
      options.vocab_size = parse_count(a, value());
      have_size = true;
    } else if (a == "--output") {
      output = value();
    } else if (a == "--min-frequency") {
      options.min_frequency = parse_count(a, value());
    } else if (a == "--unused") {
      options.unused_tokens = parse_count(a, value());
    } else if (a == "--lowercase") {
      options.lowercase = true;
    } else if (a == "--no-lowercase") {
      options.lowercase = false;
    } else {
      ELECTRA_USER_CHECK(false, "unknown argument '", a, "' (see 'electra build-vocab --help')");
    }
  }
  ELECTRA_USER_CHECK(!inputs.empty(), "--input is required (see 'electra build-vocab --help')");
  ELECTRA_USER_CHECK(have_size, "--vocab-size is required (see 'electra build-vocab --help')");
  ELECTRA_USER_CHECK(!output.empty(), "--output is required (see 'electra build-vocab --help')");
  options.progress = true;

  Stopwatch clock;
  const auto files = data::expand_text_inputs(inputs);
  data::WordCounter counter(options.lowercase);
  counter.add_files(files, options.progress);
  std::fprintf(stderr, "build-vocab: %zu files, %zu distinct words; training...\n", files.size(),
               counter.counts().size());
  const auto tokens = data::train_wordpiece_vocab(counter.counts(), options);
  const data::Vocab vocab = data::Vocab::from_tokens(tokens, output);
  vocab.save(output);
  std::fprintf(stderr, "build-vocab: wrote %zu tokens to %s in %.1f s (hash %016llx)\n",
               vocab.size(), output.c_str(), clock.seconds(),
               static_cast<unsigned long long>(vocab.hash()));
  if (vocab.size() < options.vocab_size) {
    std::fprintf(stderr,
                 "build-vocab: note: the corpus supports only %zu tokens (no pair left with "
                 "frequency >= %llu)\n",
                 vocab.size(), static_cast<unsigned long long>(options.min_frequency));
  }
  return 0;
}

}  // namespace electra::apps
