// electra build-vocab: trains a WordPiece vocabulary from text (data/vocab_trainer.h).
#include <cstdio>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/command.h"
#include "apps/run_device.h"
#include "data/text_reader.h"
#include "data/vocab.h"
#include "data/vocab_trainer.h"
#include "engine/error.h"
#include "engine/thread_pool.h"
#include "engine/timer.h"

namespace electra::apps {
namespace {

constexpr const char* kUsage =
    "usage: electra build-vocab --input FILE_OR_DIR... --vocab-size N --output vocab.txt\n"
    "                           [--min-frequency K] [--unused N] [--lowercase | --no-lowercase]\n"
    "                           [--threads N]\n"
    "  --input          .txt / .txt.zst files or directories of them (repeatable)\n"
    "  --vocab-size     tokens in the vocabulary, special tokens included\n"
    "  --output         where to write vocab.txt (one token per line)\n"
    "  --min-frequency  a pair seen fewer times is never merged (default 2)\n"
    "  --unused         [unusedK] placeholder tokens after [PAD] (default 0)\n"
    "  --lowercase      lowercase and strip accents (the default; --no-lowercase keeps case)\n"
    "  --threads        CPU threads counting the words (0, the default: all cores this process\n"
    "                   may use); vocab.txt does not depend on it\n";

}  // namespace

int cmd_build_vocab(const std::vector<std::string>& args) {
  std::vector<std::string> inputs;
  std::string output;
  data::VocabTrainerOptions options;
  bool have_size = false;
  int64_t threads = 0;
  ArgParser parser("build-vocab", kUsage);
  parser.values("--input", [&](const std::string& v) { inputs.push_back(v); })
      .count("--vocab-size",
             [&](uint64_t n) {
               options.vocab_size = n;
               have_size = true;
             })
      .value("--output", [&](const std::string& v) { output = v; })
      .count("--min-frequency", [&](uint64_t n) { options.min_frequency = n; })
      .count("--unused", [&](uint64_t n) { options.unused_tokens = n; })
      .switch_flag("--lowercase", [&] { options.lowercase = true; })
      .switch_flag("--no-lowercase", [&] { options.lowercase = false; })
      .count("--threads", [&](uint64_t n) { threads = checked_thread_count("--threads", n); });
  if (!parser.parse(args)) return 0;
  parser.require(!inputs.empty(), "--input");
  parser.require(have_size, "--vocab-size");
  parser.require(!output.empty(), "--output");
  options.progress = true;
  data::validate_vocab_options(options);

  Stopwatch clock;
  const auto files = data::expand_text_inputs(inputs);
  ThreadPool pool(threads == 0 ? available_cores() : static_cast<int>(threads));
  data::WordCounter counter(options.lowercase);
  counter.add_files(files, options.progress, pool);
  std::fprintf(stderr,
               "build-vocab: %zu files, %zu distinct words (counted on %d threads in %.1f s); "
               "training...\n",
               files.size(), counter.counts().size(), pool.threads(), clock.seconds());
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
