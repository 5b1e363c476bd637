// Shared machinery of `electra encode` and `electra score` (contract in apps/text_inference.h).
#include "apps/text_inference.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/tokenizer.h"
#include "engine/timer.h"
#include "train/train_progress.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

int64_t sequence_length(const TextInferenceArgs& a, const EncoderConfig& encoder) {
  if (a.max_seq_len == 0) return std::min<int64_t>(512, encoder.max_positions);
  ELECTRA_USER_CHECK(
      a.max_seq_len >= 2 && static_cast<int64_t>(a.max_seq_len) <= encoder.max_positions,
      "--max-seq-len ", a.max_seq_len, " must lie in [2, ", encoder.max_positions,
      "] (the model's max_position_embeddings)");
  return static_cast<int64_t>(a.max_seq_len);
}

FinetuneInit checked_init(const std::string& command, const TextInferenceArgs& a) {
  ELECTRA_USER_CHECK(!a.checkpoint.empty(), "--checkpoint is required (see 'electra ", command,
                     " --help')");
  ELECTRA_USER_CHECK(!a.input.empty(), "--input is required (see 'electra ", command, " --help')");
  ELECTRA_USER_CHECK(a.batch_size > 0, "--batch-size must be positive");
  return resolve_init(a.checkpoint);
}

}  // namespace

ArgParser& add_text_inference_args(ArgParser& parser, TextInferenceArgs& a) {
  return parser.value("--checkpoint", [&](const std::string& v) { a.checkpoint = v; })
      .value("--input", [&](const std::string& v) { a.input = v; })
      .value("--output", [&](const std::string& v) { a.output = v; })
      .value("--vocab", [&](const std::string& v) { a.vocab = v; })
      .value("--device", [&](const std::string& v) { a.device = checked_device_flag(v); })
      .count("--batch-size", [&](uint64_t n) { a.batch_size = n; })
      .count("--max-seq-len", [&](uint64_t n) { a.max_seq_len = n; })
      .count("--threads", [&](uint64_t n) { a.threads = checked_thread_count("--threads", n); });
}

TextInference::TextInference(const std::string& command, const TextInferenceArgs& args,
                             bool with_head)
    : command_(command),
      init_(checked_init(command, args)),
      tokenizer_(checkpoint_tokenizer(args.vocab, init_.model_dir)),
      device_(open_device(args.device, Precision::F32, 0, "--device", 0, 1, args.threads)),
      model_(device_.ctx, init_.encoder, static_cast<int64_t>(args.batch_size),
             sequence_length(args, init_.encoder), with_head) {
  ELECTRA_USER_CHECK(static_cast<int64_t>(tokenizer_.vocab.size()) == init_.encoder.vocab_size,
                     tokenizer_.vocab.source(), " has ", tokenizer_.vocab.size(),
                     " tokens but the model's vocab_size is ", init_.encoder.vocab_size);
  ELECTRA_USER_CHECK(!with_head || !fs::exists(fs::path(init_.model_dir) / "finetune.json"),
                     init_.model_dir, " is a fine-tuned checkpoint, without the replaced-token ",
                     "head that ", command, " needs: give a pre-training checkpoint (or an HF ",
                     "ElectraForPreTraining directory)");
  model_.load(device_.ctx, init_.model_dir);
  ELECTRA_USER_CHECK(fs::is_regular_file(args.input), args.input,
                     ": no such file (one text per line)");
  std::ifstream in(args.input, std::ios::binary);
  ELECTRA_USER_CHECK(in, args.input, ": cannot open");
  data::Tokenizer tokenizer(tokenizer_.vocab, tokenizer_.lowercase);
  const size_t t = static_cast<size_t>(model_.seq_len());
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    TextLine l{line, tokenizer.encode_single(line, t).ids};
    lines_.push_back(std::move(l));
  }
  ELECTRA_USER_CHECK(!lines_.empty(), args.input, ": no lines");
  if (tokenizer.invalid_utf8() > 0) {
    std::fprintf(stderr, "%s: note: %s: %llu ill-formed UTF-8 sequences were dropped\n",
                 command.c_str(), args.input.c_str(),
                 static_cast<unsigned long long>(tokenizer.invalid_utf8()));
  }
  std::fprintf(stderr, "%s: %zu lines of %s, %s (%s, %s), on %s\n", command.c_str(), lines_.size(),
               args.input.c_str(), init_.model_dir.c_str(),
               tokenizer_.lowercase ? "lower-cased" : "cased", tokenizer_.casing_source.c_str(),
               device_.description.c_str());
}

void TextInference::run(const std::function<void(size_t line, size_t row)>& each) {
  const size_t b = static_cast<size_t>(model_.batch()), t = static_cast<size_t>(model_.seq_len());
  const int32_t pad = tokenizer_.vocab.pad_id();
  std::vector<int32_t> ids(b * t), segments(b * t, 0);
  Stopwatch clock, since_report;
  for (size_t first = 0; first < lines_.size(); first += b) {
    const size_t count = std::min(b, lines_.size() - first);
    std::fill(ids.begin(), ids.end(), pad);
    for (size_t r = 0; r < count; ++r) {
      const std::vector<int32_t>& line = lines_[first + r].ids;
      std::copy(line.begin(), line.end(), ids.begin() + static_cast<ptrdiff_t>(r * t));
    }
    model_.forward(device_.ctx, ids, segments, pad);
    for (size_t r = 0; r < count; ++r) each(first + r, r);
    const size_t done = first + count;
    if (since_report.seconds() >= 10 && done < lines_.size()) {
      const double per_line = clock.seconds() / static_cast<double>(done);
      std::fprintf(
          stderr, "%s: %zu/%zu lines | ETA %s\n", command_.c_str(), done, lines_.size(),
          ProgressReporter::format_duration(per_line * static_cast<double>(lines_.size() - done))
              .c_str());
      since_report.restart();
    }
  }
}

}  // namespace electra::apps
