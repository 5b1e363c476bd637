// electra score: the discriminator's own task on a user's text: for each WordPiece token, the
// probability that it was replaced (sigmoid of ElectraForPreTraining's logit).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "apps/command.h"
#include "apps/text_inference.h"
#include "engine/safetensors.h"

namespace electra::apps {
namespace {

constexpr const char* kUsage =
    "usage: electra score --checkpoint DIR --input FILE [--output FILE] [--format table|jsonl]\n"
    "                     [--vocab vocab.txt] [--batch-size 32] [--max-seq-len N]\n"
    "                     [--device auto|cpu|cuda] [--threads N (CPU threads; 0: all cores)]\n"
    "  for each line of FILE, its WordPiece tokens and the discriminator's probability that each\n"
    "  was replaced (what pre-training taught it); [CLS] and [SEP] are not shown\n"
    "  --checkpoint  a pre-training checkpoint or run directory, or an HF ElectraForPreTraining\n"
    "                directory (the replaced-token head is needed)\n"
    "  --format      table (readable; tokens above 0.5 marked '*'; the default) or jsonl\n"
    "                ({\"line\", \"text\", \"tokens\", \"replaced\"} per line)\n"
    "  --output      a file instead of stdout\n";

}  // namespace

int cmd_score(const std::vector<std::string>& args) {
  TextInferenceArgs a;
  std::string format = "table";
  ArgParser parser("score", kUsage);
  add_text_inference_args(parser, a).value("--format", [&](const std::string& v) {
    ELECTRA_USER_CHECK(v == "table" || v == "jsonl", "--format must be table or jsonl, got '", v,
                       "'");
    format = v;
  });
  if (!parser.parse(args)) return 0;
  TextInference run("score", a, /*with_head=*/true);
  const size_t t = static_cast<size_t>(run.model().seq_len());
  const data::Vocab& vocab = run.tokenizer().vocab;
  std::string text;
  std::vector<float> logits;
  run.run([&](size_t line, size_t row) {
    if (row == 0) logits = run.model().logits(run.ctx());
    const TextLine& l = run.lines()[line];
    std::vector<std::string> tokens;
    std::vector<double> replaced;
    // Positions 1 .. n - 2: the text's pieces between [CLS] and [SEP].
    for (size_t i = 1; i + 1 < l.ids.size(); ++i) {
      tokens.emplace_back(vocab.token(l.ids[i]));
      replaced.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(logits[row * t + i]))));
    }
    if (format == "jsonl") {
      text +=
          nlohmann::json{
              {"line", line + 1}, {"text", l.text}, {"tokens", tokens}, {"replaced", replaced}}
              .dump() +
          "\n";
      return;
    }
    text += str_cat("line ", line + 1, ": ", l.text, "\n");
    for (size_t i = 0; i < tokens.size(); ++i) {
      char row_text[64];
      std::snprintf(row_text, sizeof row_text, "  %6.4f%s ", replaced[i],
                    replaced[i] > 0.5 ? " *" : "  ");
      text += row_text + tokens[i] + "\n";
    }
  });
  if (a.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    write_file_atomic(a.output, text);
    std::fprintf(stderr, "score: wrote %s (%zu lines)\n", a.output.c_str(), run.lines().size());
  }
  return 0;
}

}  // namespace electra::apps
