// electra pretrain-eval: what a pre-training checkpoint does on text it did not train on. Each line
// is one sequence ([CLS] text [SEP]); the run's corruption (models/pretrainer.h: masking, the
// generator's samples) is applied with the models in eval mode (no dropout), and the
// discriminator's replaced-token detection is counted over all text tokens ([CLS], [SEP] and
// padding excluded) against the trivial "everything is original" prediction. --examples K prints,
// for the first K lines, the generator's top predictions at the masked positions and the
// discriminator's per-token probabilities with the real replacements marked. Beyond p > 0.5: a
// precision/recall table over thresholds and an operating point (apps/detection_threshold.h) chosen
// on the odd-numbered lines (validation) and measured on the even-numbered ones (test).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/command.h"
#include "apps/detection_threshold.h"
#include "apps/finetune_checkpoint.h"
#include "apps/pretrain_init.h"
#include "apps/run_device.h"
#include "data/tokenizer.h"
#include "engine/safetensors.h"
#include "models/host_transfer.h"
#include "train/trainer_checkpoint.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: electra pretrain-eval --checkpoint DIR --input FILE [--examples K] [--top K]\n"
    "                             [--json FILE] [--vocab vocab.txt] [--batch-size 32]\n"
    "                             [--max-seq-len 128] [--seed 1] [--min-precision 0.5]\n"
    "                             [--device auto|cpu|cuda]\n"
    "  replaced-token detection of a pre-training checkpoint on held-out text (one sequence per\n"
    "  line of FILE), with the corruption the run trained with (its masking and sampling\n"
    "  temperature, from the checkpoint's trainer_state.json; the generator's samples)\n"
    "  and the models in eval mode: recall, precision (p > 0.5), accuracy and BCE against the\n"
    "  'everything is original' prediction, and the generator's masked-word accuracy\n"
    "  --checkpoint  a pre-training checkpoint or run directory (discriminator/ and generator/)\n"
    "  --examples    print the first K lines: the generator's --top predictions for each masked\n"
    "                word, and the discriminator's per-token 'replaced' probability\n"
    "  --json        also write the figures as one JSON object to FILE\n"
    "  --seed        of the masking and sampling (the same seed gives the same corruption)\n"
    "  --min-precision  the operating point: the threshold with the most recall at this\n"
    "                precision, chosen on lines 1, 3, 5, ... (validation) and measured on\n"
    "                lines 2, 4, 6, ... (test)\n";

struct Args {
  std::string checkpoint, input, json, vocab;
  std::string device = "auto";
  uint64_t batch_size = 32, max_seq_len = 128, seed = 1, examples = 0, top = 3;
  double min_precision = 0.5;
};

// The thresholds of the precision/recall table.
constexpr double kTableThresholds[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};

// Pooled over every text token of every line.
struct Counts {
  double tokens = 0, replaced = 0, flagged = 0, true_positive = 0, correct = 0, bce = 0;
  double masked = 0, generator_correct = 0;
};

// The masking of the run that wrote the checkpoint (trainer_state.json's "config" beside
// discriminator/: masking.mask_prob, mask_token_prob, temperature), so that the held-out
// corruption is the one the discriminator was trained against; the defaults without it.
void read_masking(const std::string& discriminator_dir, PretrainOptions& options,
                  std::string& from) {
  const auto config = read_run_config(discriminator_dir);
  if (!config) {
    from = "the defaults (no trainer_state.json beside the models)";
    return;
  }
  for (const auto& [key, value] : *config) {
    if (key == "masking.mask_prob") options.mask_prob = std::stof(value);
    if (key == "masking.mask_token_prob") options.mask_token_prob = std::stof(value);
    if (key == "masking.temperature") options.temperature = std::stof(value);
  }
  from = (fs::path(discriminator_dir).parent_path() / "trainer_state.json").string();
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// -log sigmoid(x) without overflow.
double softplus(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// What one batch's forward produced, on the host.
struct BatchResult {
  std::vector<int32_t> positions, generator_ids, samples, labels;
  std::vector<int32_t> seen;  // [B * T]: what the discriminator saw (the samples at the slots)
  std::vector<float> weights;
  std::vector<double> generator_logits, disc_logits;  // [B * N, Vp], [B * T]
};

std::string probability_text(double x) {
  char s[32];
  std::snprintf(s, sizeof s, "%.4f", x);
  return s;
}

// The example lines: masked words with the generator's top predictions, then each token's
// probability of having been replaced ('R' marks the real replacements, '*' p > 0.5).
std::string example(const data::Vocab& vocab, const std::vector<int32_t>& ids, const BatchResult& r,
                    size_t row, int64_t t, int64_t n, int64_t vp, uint64_t top, int32_t mask_id) {
  const auto word = [&](int32_t id) { return std::string(vocab.token(id)); };
  std::string out;
  for (int64_t s = 0; s < n; ++s) {
    const size_t slot = row * static_cast<size_t>(n) + static_cast<size_t>(s);
    if (r.weights[slot] == 0) continue;
    const size_t pos = static_cast<size_t>(r.positions[slot]);
    const double* logits = r.generator_logits.data() + slot * static_cast<size_t>(vp);
    const size_t v = vocab.size();  // the padding columns beyond it are not words
    std::vector<size_t> order(v);
    for (size_t i = 0; i < v; ++i) order[i] = i;
    const size_t k = std::min<size_t>(top, v);
    std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(),
                      [&](size_t a, size_t b) { return logits[a] > logits[b]; });
    double norm = 0;
    for (size_t i = 0; i < v; ++i) norm += std::exp(logits[i] - logits[order[0]]);
    out += str_cat(
        "    ", word(ids[row * static_cast<size_t>(t) + pos]),
        r.generator_ids[row * static_cast<size_t>(t) + pos] == mask_id ? " [MASK]" : " (kept)",
        " -> generator:");
    for (size_t i = 0; i < k; ++i) {
      out += str_cat(" ", word(static_cast<int32_t>(order[i])), " ",
                     probability_text(std::exp(logits[order[i]] - logits[order[0]]) / norm));
    }
    out += str_cat("; sampled ", word(r.samples[slot]), "\n");
  }
  out += "    discriminator, P(replaced) per token (R: really replaced, *: p > 0.5):\n";
  for (int64_t i = 1; i < t; ++i) {
    const size_t at = row * static_cast<size_t>(t) + static_cast<size_t>(i);
    const int32_t id = ids[at];
    if (id == vocab.sep_id() || id == vocab.pad_id()) break;
    const double p = sigmoid(r.disc_logits[at]);
    const bool replaced = r.labels[at] != 0;
    char head[48];
    std::snprintf(head, sizeof head, "      %6.4f %s%s ", p, replaced ? "R" : " ",
                  p > 0.5 ? "*" : " ");
    // The discriminator saw the sample at a replaced position; the original follows it.
    out += head;
    out += replaced ? str_cat(word(r.seen[at]), "   (was: ", word(id), ")") : word(id);
    out += "\n";
  }
  return out;
}

}  // namespace

int cmd_pretrain_eval(const std::vector<std::string>& args) {
  Args a;
  ArgParser parser("pretrain-eval", kUsage);
  parser.value("--checkpoint", [&](const std::string& v) { a.checkpoint = v; })
      .value("--input", [&](const std::string& v) { a.input = v; })
      .value("--json", [&](const std::string& v) { a.json = v; })
      .value("--vocab", [&](const std::string& v) { a.vocab = v; })
      .value("--device", [&](const std::string& v) { a.device = checked_device_flag(v); })
      .count("--batch-size", [&](uint64_t n) { a.batch_size = n; })
      .count("--max-seq-len", [&](uint64_t n) { a.max_seq_len = n; })
      .count("--seed", [&](uint64_t n) { a.seed = n; })
      .count("--examples", [&](uint64_t n) { a.examples = n; })
      .count("--top", [&](uint64_t n) { a.top = n; })
      .value("--min-precision", [&](const std::string& v) {
        char* end = nullptr;
        a.min_precision = std::strtod(v.c_str(), &end);
        ELECTRA_USER_CHECK(
            !v.empty() && *end == '\0' && a.min_precision > 0 && a.min_precision <= 1,
            "--min-precision ", v, ": not a number in (0, 1]");
      });
  if (!parser.parse(args)) return 0;
  parser.require(!a.checkpoint.empty(), "--checkpoint");
  parser.require(!a.input.empty(), "--input");
  ELECTRA_USER_CHECK(a.batch_size > 0, "--batch-size must be positive");
  ELECTRA_USER_CHECK(a.top > 0, "--top must be positive");

  const InitSource source = find_init_source(a.checkpoint, "");
  ELECTRA_USER_CHECK(!source.generator_dir.empty(), a.checkpoint,
                     ": an mlm pre-training has no generator and no replaced-token detector for "
                     "pretrain-eval to measure");
  const data::ModelTokenizer tok = checkpoint_tokenizer(a.vocab, source.discriminator_dir);
  const data::Vocab& vocab = tok.vocab;
  ELECTRA_USER_CHECK(static_cast<int64_t>(vocab.size()) == source.model.discriminator.vocab_size,
                     vocab.source(), " has ", vocab.size(),
                     " tokens but the model's vocab_size is ",
                     source.model.discriminator.vocab_size);
  const int64_t t = static_cast<int64_t>(a.max_seq_len);
  ELECTRA_USER_CHECK(t >= 4 && t <= source.model.discriminator.max_positions, "--max-seq-len ", t,
                     " must lie in [4, ", source.model.discriminator.max_positions,
                     "] (the model's max_position_embeddings)");

  std::ifstream in(a.input, std::ios::binary);
  ELECTRA_USER_CHECK(in, a.input, ": cannot open (one text per line)");
  data::Tokenizer tokenizer(vocab, tok.lowercase);
  std::vector<std::vector<int32_t>> lines;
  std::vector<std::string> texts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<int32_t> ids = tokenizer.encode_single(line, static_cast<size_t>(t)).ids;
    if (ids.size() <= 2) continue;  // blank: nothing to mask
    lines.push_back(std::move(ids));
    texts.push_back(line);
  }
  ELECTRA_USER_CHECK(!lines.empty(), a.input, ": no line with text");

  RunDevice device = open_device(a.device, Precision::F32, a.seed, "--device");
  Context& ctx = device.ctx;
  PretrainOptions options;
  options.batch = static_cast<int64_t>(a.batch_size);
  options.seq_len = t;
  options.tokens = SpecialTokens{vocab.pad_id(), vocab.cls_id(), vocab.sep_id(), vocab.mask_id()};
  std::string masking_from;
  read_masking(source.discriminator_dir, options, masking_from);
  ElectraPretrainer model(ctx, source.model, options);
  load_init_weights(ctx, model, source, /*report=*/false);
  std::fprintf(stderr, "pretrain-eval: %zu lines of %s, %s, on %s\n", lines.size(), a.input.c_str(),
               source.description.c_str(), device.description.c_str());
  std::fprintf(stderr,
               "pretrain-eval: masking as in training (%s): mask_prob %g, mask_token_prob %g, "
               "sampling temperature %g\n",
               masking_from.c_str(), options.mask_prob, options.mask_token_prob,
               options.temperature);

  const int64_t b = options.batch, n = model.slots();
  const size_t bt = static_cast<size_t>(b * t);
  std::vector<int32_t> planes(static_cast<size_t>(model.input().numel()));
  Counts c;
  std::vector<ScoredToken> validation, test;  // odd- and even-numbered lines (1-based)
  std::string examples;
  for (size_t first = 0, step = 0; first < lines.size(); first += static_cast<size_t>(b), ++step) {
    const size_t rows = std::min(static_cast<size_t>(b), lines.size() - first);
    HostBatch batch;
    batch.ids.assign(bt, vocab.pad_id());
    batch.segment_ids.assign(bt, 0);
    // A short last batch repeats its first line in the unused rows (not counted).
    for (size_t r = 0; r < static_cast<size_t>(b); ++r) {
      const std::vector<int32_t>& ids = lines[first + (r < rows ? r : 0)];
      std::copy(ids.begin(), ids.end(), batch.ids.begin() + static_cast<ptrdiff_t>(r * t));
    }
    model.pack_batch(batch, planes.data());
    upload_to(ctx, model.input(), planes);
    model.set_step(ctx, static_cast<uint32_t>(step), 1.0f);
    const Corruption corruption = model.corrupt(ctx);
    const DropoutPass eval{model.rng(ctx, RngPurpose::kDropout), false};
    BatchResult r;
    const Tensor& generator_logits = model.generator_forward(ctx, corruption, eval);
    r.generator_logits = download_doubles(ctx, generator_logits);
    ForwardContext saved;
    saved.pass = eval;
    model.generator_loss(ctx, corruption, saved);
    const Tensor& samples = saved.samples;
    r.disc_logits =
        download_doubles(ctx, model.discriminator_forward(ctx, corruption, samples, eval));
    r.labels = download_as<int32_t>(ctx, model.labels());
    r.positions = download_as<int32_t>(ctx, corruption.positions);
    r.weights = download_as<float>(ctx, corruption.weights);
    r.samples = download_as<int32_t>(ctx, samples);
    r.generator_ids = download_as<int32_t>(ctx, corruption.generator_ids);
    const std::vector<int32_t> original = download_as<int32_t>(ctx, corruption.original);
    const int64_t vp = static_cast<int64_t>(r.generator_logits.size()) / (b * n);
    r.seen = batch.ids;
    for (size_t slot = 0; slot < r.positions.size(); ++slot) {
      if (r.weights[slot] != 0) {
        r.seen[(slot / static_cast<size_t>(n)) * static_cast<size_t>(t) +
               static_cast<size_t>(r.positions[slot])] = r.samples[slot];
      }
    }
    for (size_t row = 0; row < rows; ++row) {
      for (int64_t i = 1; i < t; ++i) {
        const size_t at = row * static_cast<size_t>(t) + static_cast<size_t>(i);
        const int32_t id = batch.ids[at];
        if (id == vocab.sep_id() || id == vocab.pad_id()) break;
        const bool replaced = r.labels[at] != 0, flagged = r.disc_logits[at] > 0;
        c.tokens += 1;
        c.replaced += replaced;
        c.flagged += flagged;
        c.true_positive += replaced && flagged;
        c.correct += replaced == flagged;
        c.bce += softplus(replaced ? -r.disc_logits[at] : r.disc_logits[at]);
        ((first + row) % 2 == 0 ? validation : test)
            .push_back({sigmoid(r.disc_logits[at]), replaced});
      }
      for (int64_t s = 0; s < n; ++s) {
        const size_t slot = row * static_cast<size_t>(n) + static_cast<size_t>(s);
        if (r.weights[slot] == 0) continue;
        const double* logits = r.generator_logits.data() + slot * static_cast<size_t>(vp);
        const size_t best =
            static_cast<size_t>(std::max_element(logits, logits + vocab.size()) - logits);
        c.masked += 1;
        c.generator_correct += static_cast<int32_t>(best) == original[slot];
      }
      if (first + row < a.examples) {
        examples += str_cat("  line ", first + row + 1, ": ", texts[first + row], "\n");
        examples += example(vocab, batch.ids, r, row, t, n, vp, a.top, vocab.mask_id());
      }
    }
  }
  const double f = c.replaced / c.tokens;
  const double recall = c.replaced > 0 ? c.true_positive / c.replaced : 0;
  const double precision = c.flagged > 0 ? c.true_positive / c.flagged : 0;
  const double accuracy = c.correct / c.tokens;
  const double bce = c.bce / c.tokens;
  const double constant = f > 0 && f < 1 ? -(f * std::log(f) + (1 - f) * std::log(1 - f)) : 0.0;
  std::printf(
      "pretrain-eval: %.0f text tokens of %zu held-out lines, %.0f replaced (%.4f)\n"
      "  replaced-token recall    %.4f   vs 0 for 'everything is original'\n"
      "  precision (p > 0.5)      %.4f   (%.0f tokens flagged)\n"
      "  accuracy                 %.4f   vs %.4f for 'everything is original'\n"
      "  loss (BCE)               %.4f   vs %.4f for the best constant prediction\n"
      "  generator: masked-word accuracy %.4f (argmax = original, %.0f masked)\n",
      c.tokens, lines.size(), c.replaced, f, recall, precision, c.flagged, accuracy, 1 - f, bce,
      constant, c.generator_correct / std::max(1.0, c.masked), c.masked);
  // The table is descriptive (nothing is chosen from it); the operating point is chosen on the
  // validation lines only and its figures are those of the test lines.
  std::printf(
      "  precision / recall over thresholds (flagged: p > threshold)\n"
      "    threshold   validation: precision recall   test: precision recall\n");
  nlohmann::json table = nlohmann::json::array();
  for (const double threshold : kTableThresholds) {
    const DetectionAt v = detection_at(validation, threshold), e = detection_at(test, threshold);
    std::printf("    %9.2f   %21.4f %6.4f   %15.4f %6.4f\n", threshold, v.precision, v.recall,
                e.precision, e.recall);
    table.push_back({{"threshold", threshold},
                     {"validation_precision", v.precision},
                     {"validation_recall", v.recall},
                     {"test_precision", e.precision},
                     {"test_recall", e.recall}});
  }
  const std::optional<double> chosen = choose_threshold(validation, a.min_precision);
  nlohmann::json point = {{"min_precision", a.min_precision},
                          {"validation_tokens", validation.size()},
                          {"validation_replaced", detection_at(validation, 1).replaced},
                          {"test_tokens", test.size()},
                          {"test_replaced", detection_at(test, 1).replaced},
                          {"threshold", nullptr}};
  if (chosen) {
    const DetectionAt v = detection_at(validation, *chosen), e = detection_at(test, *chosen);
    std::printf(
        "  operating point: threshold %.4f, the most recall at precision >= %g on the validation\n"
        "  lines (1, 3, 5, ...: %zu tokens; there recall %.4f, precision %.4f), measured on the\n"
        "  test lines (2, 4, 6, ...: %zu tokens, %zu replaced):\n"
        "    test recall %.4f   test precision %.4f   (%zu tokens flagged)\n",
        *chosen, a.min_precision, v.tokens, v.recall, v.precision, e.tokens, e.replaced, e.recall,
        e.precision, e.flagged);
    point.update({{"threshold", *chosen},
                  {"validation_recall", v.recall},
                  {"validation_precision", v.precision},
                  {"test_recall", e.recall},
                  {"test_precision", e.precision},
                  {"test_flagged", e.flagged}});
  } else {
    std::printf("  operating point: no threshold reaches precision %g on the validation lines\n",
                a.min_precision);
  }
  if (!examples.empty()) std::printf("examples:\n%s", examples.c_str());
  if (!a.json.empty()) {
    const nlohmann::json j = {{"lines", lines.size()},
                              {"tokens", c.tokens},
                              {"replaced", c.replaced},
                              {"replaced_frac", f},
                              {"recall", recall},
                              {"precision", precision},
                              {"accuracy", accuracy},
                              {"constant_accuracy", 1 - f},
                              {"bce", bce},
                              {"constant_bce", constant},
                              {"flagged", c.flagged},
                              {"generator_accuracy", c.generator_correct / std::max(1.0, c.masked)},
                              {"thresholds", table},
                              {"operating_point", point}};
    write_file_atomic(a.json, j.dump() + "\n");
  }
  return 0;
}

}  // namespace electra::apps
