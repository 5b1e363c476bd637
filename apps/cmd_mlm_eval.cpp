// electra mlm-eval: masked-token prediction on held-out text (the paper's Appendix G), for each
// model of a pre-training checkpoint that can predict a masked token:
//   (a) the generator: argmax pG(x | c); loss -log pG(original | c);
//   (b) the discriminator used as an MLM: among the generator's top-k candidates x, the argmax of
//       D(x, c) pG(x | c) / (a (1 - D(x, c)) + pG(x | c)), a = (1 - p_mask) / p_mask
//       (models/discriminator_mlm.h); no loss (the scores are not a distribution);
//   (c) an mlm (or replace-mlm) checkpoint's own MLM head: argmax and loss.
// Every model sees the same masking: the masking op (kernels/masking.h) with --mask-prob and
// --seed, every chosen position [MASK] (no kept or random tokens), so two checkpoints evaluated
// on the same input with the same flags are compared on the same positions.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/command.h"
#include "apps/finetune_checkpoint.h"
#include "apps/pretrain_init.h"
#include "apps/run_device.h"
#include "data/shard.h"
#include "data/shard_reader.h"
#include "data/tokenizer.h"
#include "engine/safetensors.h"
#include "engine/timer.h"
#include "models/discriminator_mlm.h"
#include "models/hf_checkpoint.h"
#include "models/host_transfer.h"
#include "train/train_progress.h"
#include "train/trainer_checkpoint.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: electra mlm-eval --checkpoint DIR --input TEXT_OR_SHARDS [--top-k 100]\n"
    "                        [--mask-prob 0.15] [--max-lines N] [--batch-size 32]\n"
    "                        [--max-seq-len 128] [--seed 1] [--vocab vocab.txt] [--json FILE]\n"
    "                        [--device auto|cpu|cuda] [--threads N]\n"
    "  masked-token accuracy (and loss where defined) on held-out text of (a) the generator,\n"
    "  (b) the discriminator used as a masked LM by the rule of the paper's Appendix G (among\n"
    "  the generator's top-k candidates x, the argmax of D pG / (a (1 - D) + pG), a =\n"
    "  (1 - mask_prob) / mask_prob, D the discriminator's probability that x is original), and\n"
    "  (c) the MLM head of an mlm or replace-mlm checkpoint; it says which apply\n"
    "  --checkpoint  a pre-training checkpoint, run directory or export of any objective\n"
    "  --input       a text file (one sequence per line, up to --max-seq-len tokens) or shards\n"
    "                (a directory of electra build-data, or .bin files: their sequence length)\n"
    "  --top-k       candidates per masked position for (b)\n"
    "  --mask-prob   the share of tokens masked (the masking op's count; every masked position\n"
    "                holds [MASK]); also p_mask of Appendix G's rule\n"
    "  --seed        of the masking: the same input and seed mask the same positions for every\n"
    "                checkpoint\n"
    "  cost: per batch of --batch-size sequences one generator pass and --top-k discriminator\n"
    "  passes (candidate j of every masked position of a sequence is placed at once, so while D\n"
    "  is read at one position the sequence's other masked positions hold their own j-th\n"
    "  candidates, not [MASK]); (b) thus costs about top-k times a discriminator forward\n";

struct Args {
  std::string checkpoint, input, json, vocab;
  std::string device = "auto";
  uint64_t batch_size = 32, max_seq_len = 128, seed = 1, top_k = 100, max_lines = 0;
  int64_t threads = 0;
  double mask_prob = 0.15;
};

// The objective the checkpoint was trained with: trainer_state.json's config ("objective=..."
// when not electra); without it (an export), what the model directories hold.
Objective checkpoint_objective(const InitSource& source) {
  if (const auto config = read_run_config(source.discriminator_dir)) {
    const auto it = config->find("objective");
    if (it == config->end()) return Objective::kElectra;
    Objective o;
    ELECTRA_USER_CHECK(
        parse_objective(it->second, o),
        (fs::path(source.discriminator_dir).parent_path() / "trainer_state.json").string(),
        ": unknown objective=", it->second);
    return o;
  }
  if (source.generator_dir.empty()) return Objective::kMlm;
  const std::string config = (fs::path(source.discriminator_dir) / "config.json").string();
  if (read_hf_architecture(config) == "ElectraForMaskedLM") return Objective::kReplaceMlm;
  std::ifstream in(config);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find("all-tokens-mlm") != std::string::npos ? Objective::kAllTokensMlm
                                                          : Objective::kElectra;
}

// One held-out sequence: token and segment ids, [CLS] ... [SEP] ([SEP] ... [SEP]).
struct Sequence {
  std::vector<int32_t> ids, segments;
};

std::vector<Sequence> read_text(const std::string& path, const data::ModelTokenizer& tok, int64_t t,
                                uint64_t max_lines) {
  std::ifstream in(path, std::ios::binary);
  ELECTRA_USER_CHECK(in, path, ": cannot open (one text per line, or shards)");
  data::Tokenizer tokenizer(tok.vocab, tok.lowercase);
  std::vector<Sequence> out;
  size_t number = 0;
  for (std::string line; std::getline(in, line) && (max_lines == 0 || out.size() < max_lines);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    Sequence s;
    s.ids = tokenizer.encode_single(line, static_cast<size_t>(t)).ids;
    ELECTRA_USER_CHECK(tokenizer.invalid_utf8() == 0, path, ":", number, ": not UTF-8 text");
    if (s.ids.size() <= 2) continue;  // blank: nothing to mask
    s.segments.assign(s.ids.size(), 0);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Sequence> read_shards(const std::string& input, const data::Vocab& vocab, int64_t& t,
                                  uint64_t max_lines) {
  const data::ShardSet shards(data::expand_shard_inputs({input}), vocab.hash());
  t = shards.seq_len();
  std::vector<Sequence> out;
  const uint64_t count = max_lines == 0 ? shards.size() : std::min(shards.size(), max_lines);
  for (uint64_t i = 0; i < count; ++i) {
    const std::span<const uint16_t> tokens = shards.example(i);
    Sequence s;
    s.segments.assign(tokens.size(), 0);
    data::segment_ids_from_tokens(tokens, static_cast<uint16_t>(vocab.sep_id()), s.segments);
    s.ids.assign(tokens.begin(), tokens.end());
    out.push_back(std::move(s));
  }
  return out;
}

// Pooled over every masked position.
struct Totals {
  double masked = 0;
  double generator_correct = 0, generator_loss = 0;
  double disc_correct = 0, in_top_k = 0;
  double mlm_correct = 0, mlm_loss = 0;
};

// -log softmax(logits)[target] and whether target is the argmax, over the first v columns.
std::pair<double, bool> xent(const double* logits, size_t v, int32_t target) {
  const double top = *std::max_element(logits, logits + v);
  double sum = 0;
  for (size_t i = 0; i < v; ++i) sum += std::exp(logits[i] - top);
  const size_t best = static_cast<size_t>(std::max_element(logits, logits + v) - logits);
  return {std::log(sum) - (logits[target] - top), static_cast<int32_t>(best) == target};
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

}  // namespace

int cmd_mlm_eval(const std::vector<std::string>& args) {
  Args a;
  std::string mask_prob_text = "0.15";
  ArgParser parser("mlm-eval", kUsage);
  parser.value("--checkpoint", [&](const std::string& v) { a.checkpoint = v; })
      .value("--input", [&](const std::string& v) { a.input = v; })
      .value("--json", [&](const std::string& v) { a.json = v; })
      .value("--vocab", [&](const std::string& v) { a.vocab = v; })
      .value("--device", [&](const std::string& v) { a.device = checked_device_flag(v); })
      .value("--mask-prob", [&](const std::string& v) { mask_prob_text = v; })
      .count("--batch-size", [&](uint64_t n) { a.batch_size = n; })
      .count("--max-seq-len", [&](uint64_t n) { a.max_seq_len = n; })
      .count("--max-lines", [&](uint64_t n) { a.max_lines = n; })
      .count("--seed", [&](uint64_t n) { a.seed = n; })
      .count("--top-k", [&](uint64_t n) { a.top_k = n; })
      .count("--threads", [&](uint64_t n) { a.threads = checked_thread_count("--threads", n); });
  if (!parser.parse(args)) return 0;
  parser.require(!a.checkpoint.empty(), "--checkpoint");
  parser.require(!a.input.empty(), "--input");
  ELECTRA_USER_CHECK(a.batch_size > 0, "--batch-size must be positive");
  ELECTRA_USER_CHECK(a.top_k > 0, "--top-k must be positive");
  {
    char* end = nullptr;
    a.mask_prob = std::strtod(mask_prob_text.c_str(), &end);
    ELECTRA_USER_CHECK(
        end != mask_prob_text.c_str() && *end == '\0' && a.mask_prob > 0 && a.mask_prob < 1,
        "--mask-prob ", mask_prob_text, ": must be a number in (0, 1)");
  }
  ELECTRA_USER_CHECK(fs::exists(a.input), "--input ", a.input, ": no such file or directory");

  const InitSource source = find_init_source(a.checkpoint, "");
  const Objective objective = checkpoint_objective(source);
  const ObjectiveWiring wiring = objective_wiring(objective);
  const bool generator = wiring.generator;
  // (b) needs the replaced-token detector; all-tokens-mlm's binary head is a copy probability.
  const bool appendix_g = generator && wiring.binary_head && !wiring.mlm_head;
  const bool own_mlm = wiring.mlm_head && !wiring.all_tokens;
  const data::ModelTokenizer tok = checkpoint_tokenizer(a.vocab, source.discriminator_dir);
  const data::Vocab& vocab = tok.vocab;
  const EncoderConfig& d = source.model.discriminator;
  ELECTRA_USER_CHECK(static_cast<int64_t>(vocab.size()) == d.vocab_size, vocab.source(), " has ",
                     vocab.size(), " tokens but the model's vocab_size is ", d.vocab_size);
  ELECTRA_USER_CHECK(a.top_k <= vocab.size(), "--top-k ", a.top_k, " exceeds the vocabulary (",
                     vocab.size(), " tokens)");
  int64_t t = static_cast<int64_t>(a.max_seq_len);
  const bool shards = fs::is_directory(a.input) || a.input.ends_with(".bin");
  std::vector<Sequence> seqs = shards ? read_shards(a.input, vocab, t, a.max_lines)
                                      : read_text(a.input, tok, t, a.max_lines);
  ELECTRA_USER_CHECK(
      t >= 4 && t <= d.max_positions, shards ? "the shards' sequence length " : "--max-seq-len ", t,
      " must lie in [4, ", d.max_positions, "] (the model's max_position_embeddings)");
  ELECTRA_USER_CHECK(!seqs.empty(), a.input, ": no sequence with text");

  RunDevice device = open_device(a.device, Precision::F32, a.seed, "--device", 0, 1, a.threads);
  Context& ctx = device.ctx;
  PretrainOptions options;
  options.batch = static_cast<int64_t>(a.batch_size);
  options.seq_len = t;
  options.mask_prob = static_cast<float>(a.mask_prob);
  options.mask_token_prob = 1.0f;  // every model sees [MASK] at every chosen position
  options.random_token_prob = 0.0f;
  options.objective = objective;
  options.tokens = SpecialTokens{vocab.pad_id(), vocab.cls_id(), vocab.sep_id(), vocab.mask_id()};
  ElectraPretrainer model(ctx, source.model, options);
  load_init_weights(ctx, model, source, /*report=*/false);
  const double prior = appendix_g_prior_ratio(a.mask_prob);
  const int64_t b = options.batch, n = model.slots();
  const size_t k = static_cast<size_t>(a.top_k), v = vocab.size();
  std::fprintf(stderr,
               "mlm-eval: %zu sequences of %s, %s (objective %s), on %s; mask_prob %g (every "
               "masked position [MASK]), seed %llu\n",
               seqs.size(), a.input.c_str(), source.description.c_str(), objective_name(objective),
               device.description.c_str(), a.mask_prob, static_cast<unsigned long long>(a.seed));

  Arena arena("mlm-eval", ctx.device(), static_cast<size_t>(2 * b * n) * 4 + 2 * Arena::kAlignment);
  const Tensor candidates_dev = arena.alloc<int32_t>({b * n});
  const Tensor masks_dev = arena.alloc<int32_t>({b * n});
  upload_to(ctx, masks_dev, std::vector<int32_t>(static_cast<size_t>(b * n), vocab.mask_id()));
  const size_t bt = static_cast<size_t>(b * t);
  std::vector<int32_t> planes(static_cast<size_t>(model.input().numel()));
  const DropoutPass eval{model.rng(ctx, RngPurpose::kDropout), false};
  Totals tot;
  Stopwatch clock, since_report;
  const size_t batches = (seqs.size() + static_cast<size_t>(b) - 1) / static_cast<size_t>(b);
  for (size_t first = 0, step = 0; first < seqs.size(); first += static_cast<size_t>(b), ++step) {
    const size_t rows = std::min(static_cast<size_t>(b), seqs.size() - first);
    HostBatch batch;
    batch.ids.assign(bt, vocab.pad_id());
    batch.segment_ids.assign(bt, 0);
    // A short last batch repeats its first sequence in the unused rows, whose slots are then
    // given weight 0 (not counted, not scored).
    for (size_t r = 0; r < static_cast<size_t>(b); ++r) {
      const Sequence& s = seqs[first + (r < rows ? r : 0)];
      std::copy(s.ids.begin(), s.ids.end(), batch.ids.begin() + static_cast<ptrdiff_t>(r * t));
      std::copy(s.segments.begin(), s.segments.end(),
                batch.segment_ids.begin() + static_cast<ptrdiff_t>(r * t));
    }
    model.pack_batch(batch, planes.data());
    upload_to(ctx, model.input(), planes);
    // The masking is keyed by (seed, batch number): the same for every checkpoint.
    model.set_step(ctx, static_cast<uint32_t>(step), 1.0f);
    const Corruption c = model.corrupt(ctx);
    std::vector<float> weights = download_as<float>(ctx, c.weights);
    std::fill(weights.begin() + static_cast<ptrdiff_t>(rows * static_cast<size_t>(n)),
              weights.end(), 0.0f);
    upload_to(ctx, c.weights, weights);
    const std::vector<int32_t> original = download_as<int32_t>(ctx, c.original);
    const std::vector<int32_t> positions = download_as<int32_t>(ctx, c.positions);
    double batch_masked = 0;
    for (float w : weights) batch_masked += w;
    tot.masked += batch_masked;

    if (generator) {
      const std::vector<double> logits =
          download_doubles(ctx, model.generator_forward(ctx, c, eval));
      const size_t vp = logits.size() / static_cast<size_t>(b * n);
      // The generator's top-k candidates and probabilities per slot, [B * N, k].
      std::vector<int32_t> cand(static_cast<size_t>(b * n) * k, vocab.mask_id());
      std::vector<double> prob(cand.size(), 0.0);
      std::vector<int32_t> order(v);
      for (size_t slot = 0; slot < static_cast<size_t>(b * n); ++slot) {
        if (weights[slot] == 0) continue;
        const double* row = logits.data() + slot * vp;
        const auto [loss, correct] = xent(row, v, original[slot]);
        tot.generator_loss += loss;
        tot.generator_correct += correct;
        if (!appendix_g) continue;
        for (size_t i = 0; i < v; ++i) order[i] = static_cast<int32_t>(i);
        std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(),
                          [&](int32_t x, int32_t y) { return row[x] > row[y]; });
        const double log_norm = loss + row[original[slot]];  // log sum exp(row)
        for (size_t j = 0; j < k; ++j) {
          cand[slot * k + j] = order[j];
          prob[slot * k + j] = std::exp(row[order[j]] - log_norm);
          tot.in_top_k += order[j] == original[slot];
        }
      }
      if (appendix_g) {
        // D(x_j, c) for candidate j at every masked position of the batch at once.
        std::vector<double> disc(cand.size(), 0.0);
        std::vector<int32_t> column(static_cast<size_t>(b * n));
        for (size_t j = 0; j < k; ++j) {
          for (size_t slot = 0; slot < column.size(); ++slot) column[slot] = cand[slot * k + j];
          upload_to(ctx, candidates_dev, column);
          const std::vector<double> z =
              download_doubles(ctx, model.discriminator_forward(ctx, c, candidates_dev, eval));
          for (size_t slot = 0; slot < column.size(); ++slot) {
            if (weights[slot] == 0) continue;
            const size_t at = (slot / static_cast<size_t>(n)) * static_cast<size_t>(t) +
                              static_cast<size_t>(positions[slot]);
            disc[slot * k + j] = 1.0 / (1.0 + std::exp(z[at]));  // sigmoid(-z): "original"
          }
        }
        for (size_t slot = 0; slot < column.size(); ++slot) {
          if (weights[slot] == 0) continue;
          const size_t pick = appendix_g_pick(&disc[slot * k], &prob[slot * k], k, prior);
          tot.disc_correct += cand[slot * k + pick] == original[slot];
        }
      }
    }
    if (own_mlm) {
      // The model's input holds [MASK] at the masked positions (mlm reads the masking op's
      // output; replace-mlm's samples are [MASK] here).
      model.discriminator_forward(ctx, c, masks_dev, eval);
      ForwardContext scored;  // the loss's gradient is not used
      scored.pass = eval;
      model.mlm_loss(ctx, c, scored);
      // Means over this batch's masked slots (StepMetrics::masked counts the generator's rows).
      const StepMetrics m = model.metrics(ctx, c);
      tot.mlm_loss += m.mlm_loss * batch_masked;
      tot.mlm_correct += m.mlm_accuracy * batch_masked;
    }
    const size_t done = first + rows;
    if (since_report.seconds() >= 10 && done < seqs.size()) {
      const double per = clock.seconds() / static_cast<double>(done);
      std::fprintf(
          stderr, "mlm-eval: batch %zu/%zu, %zu/%zu sequences | ETA %s\n", step + 1, batches, done,
          seqs.size(),
          ProgressReporter::format_duration(per * static_cast<double>(seqs.size() - done)).c_str());
      since_report.restart();
    }
  }

  const double masked = tot.masked;
  std::printf("mlm-eval: %.0f masked tokens in %zu held-out sequences (objective %s)\n", masked,
              seqs.size(), objective_name(objective));
  nlohmann::json j = {{"sequences", seqs.size()},
                      {"masked", masked},
                      {"objective", objective_name(objective)},
                      {"top_k", a.top_k},
                      {"mask_prob", a.mask_prob}};
  if (generator) {
    std::printf("  (a) generator                      accuracy %.4f   loss %.4f\n",
                ratio(tot.generator_correct, masked), ratio(tot.generator_loss, masked));
    j["generator_accuracy"] = ratio(tot.generator_correct, masked);
    j["generator_loss"] = ratio(tot.generator_loss, masked);
  } else {
    std::printf("  (a) generator                      n/a (an mlm checkpoint has none)\n");
  }
  if (appendix_g) {
    std::printf(
        "  (b) discriminator (Appendix G)     accuracy %.4f   (no loss: the scores are not a "
        "distribution; the original is among the top-%zu candidates for %.4f)\n",
        ratio(tot.disc_correct, masked), k, ratio(tot.in_top_k, masked));
    j["discriminator_accuracy"] = ratio(tot.disc_correct, masked);
    j["top_k_coverage"] = ratio(tot.in_top_k, masked);
  } else {
    std::printf("  (b) discriminator (Appendix G)     n/a (%s)\n",
                generator ? "the checkpoint has no replaced-token detector"
                          : "no generator to propose candidates");
  }
  if (own_mlm) {
    std::printf("  (c) the checkpoint's MLM head      accuracy %.4f   loss %.4f\n",
                ratio(tot.mlm_correct, masked), ratio(tot.mlm_loss, masked));
    j["mlm_accuracy"] = ratio(tot.mlm_correct, masked);
    j["mlm_loss"] = ratio(tot.mlm_loss, masked);
  } else {
    std::printf("  (c) the checkpoint's MLM head      n/a (%s)\n",
                wiring.all_tokens ? "all-tokens-mlm's head predicts with the copy mechanism"
                                  : "not an mlm or replace-mlm checkpoint");
  }
  if (!a.json.empty()) write_file_atomic(a.json, j.dump() + "\n");
  return 0;
}

}  // namespace electra::apps
