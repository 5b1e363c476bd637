#include "train/pretrain_config.h"

#include <cstdio>
#include <sstream>

#include "data/fnv.h"
#include "kernels/step_scalars.h"
#include "models/flops.h"
#include "models/pretrainer.h"
#include "train/cpu_threads.h"

namespace electra {
namespace {

// "a,b , c" -> {"a", "b", "c"}; empty items are errors.
std::vector<std::string> split_paths(const std::string& list, const std::string& file) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    ELECTRA_USER_CHECK(first != std::string::npos, file, ": data.shards: empty path in '", list,
                       "'");
    out.push_back(item.substr(first, last - first + 1));
  }
  ELECTRA_USER_CHECK(!out.empty(), file, ": data.shards: no path given");
  return out;
}

template <class T>
T in_range(const std::string& file, T value, bool ok, const char* key, const char* rule) {
  ELECTRA_USER_CHECK(ok, file, ": ", key, " must be ", rule, " (got ", value, ")");
  return value;
}

// %.17g: enough digits for a double to read back to the same value.
std::string exact(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  return buf;
}

void encoder_lines(std::ostringstream& out, const char* who, const EncoderConfig& e) {
  out << who << ".vocab_size=" << e.vocab_size << "\n"
      << who << ".embedding_size=" << e.embedding_size << "\n"
      << who << ".hidden=" << e.hidden << "\n"
      << who << ".layers=" << e.layers << "\n"
      << who << ".heads=" << e.heads << "\n"
      << who << ".ffn=" << e.ffn << "\n"
      << who << ".max_positions=" << e.max_positions << "\n"
      << who << ".type_vocab_size=" << e.type_vocab_size << "\n"
      << who << ".hidden_dropout=" << exact(e.hidden_dropout) << "\n"
      << who << ".attention_dropout=" << exact(e.attention_dropout) << "\n"
      << who << ".layer_norm_eps=" << exact(e.layer_norm_eps) << "\n";
}

// describe's line on the GPU kernel choices outside the hash (model.attention,
// model.fused_layers): what a GPU run takes; on the CPU, only a choice that has no effect there.
std::string kernels_line(const EncoderConfig& d, bool cuda) {
  const bool chosen = d.attention != AttentionImpl::kAuto || !d.fused_layers;
  if (!cuda) {
    return chosen ? "kernels: model.attention and model.fused_layers have no effect on the CPU\n"
                  : "";
  }
  return str_cat("kernels: attention ", attention_name(d.attention), " (model.attention), ",
                 d.fused_layers ? "the generator's fused blocks where a layer is 64 wide"
                                : "the generator's blocks as separate ops",
                 " (model.fused_layers)\n");
}

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kLinear:
      return "linear";
    case ScheduleKind::kConstant:
      return "constant";
    case ScheduleKind::kCosine:
      return "cosine";
  }
  return "?";
}

}  // namespace

MaskRateSchedule MaskingConfig::schedule(int64_t steps) const {
  return {.start = static_cast<float>(mask_prob),
          .end = static_cast<float>(mask_prob_end),
          .updates = linear_schedule ? steps : 0};
}

PretrainOptions PretrainConfig::pretrainer_options(const SpecialTokens& tokens) const {
  PretrainOptions o;
  static_cast<PretrainVariant&>(o) = *this;
  o.batch = train.micro_batch_size;
  o.seq_len = train.seq_len;
  o.mask_prob = static_cast<float>(masking.max_mask_prob());
  o.mask_token_prob = static_cast<float>(masking.mask_token_prob);
  if (objective_wiring(objective).bert_corruption) {  // BERT: 80% [MASK], 10% random
    o.mask_token_prob = 0.8f;
    o.random_token_prob = 0.1f;
  }
  o.temperature = static_cast<float>(masking.temperature);
  o.disc_weight = static_cast<float>(train.disc_weight);
  o.tokens = tokens;
  o.overlap_generator = train.overlap_generator;
  return o;
}

double MaskingConfig::mask_prob_at(int64_t step, int64_t steps) const {
  // The Trainer's device computes the same function (next_micro_step) from its update counter.
  return scheduled_mask_prob(schedule(steps), step);
}

void TrainConfig::set_ranks(int64_t ranks) {
  ELECTRA_CHECK(ranks > 0, "set_ranks(", ranks, ")");
  if (micro_batch_auto) {
    ELECTRA_USER_CHECK(batch_size % ranks == 0, "train.batch_size ", batch_size,
                       " cannot be split over ", ranks, " ranks: set train.batch_size to a ",
                       "multiple of ", ranks, " or train.micro_batch_size");
    micro_batch_size = batch_size / ranks;
  }
  ELECTRA_USER_CHECK(batch_size % (micro_batch_size * ranks) == 0, "train.batch_size ", batch_size,
                     " is not a multiple of train.micro_batch_size ", micro_batch_size, " x ",
                     ranks, " ranks: with a fixed global batch every rank runs the same ",
                     "number of micro-batches");
}

const char* train_device_name(TrainDevice device) {
  switch (device) {
    case TrainDevice::kAuto:
      return "auto";
    case TrainDevice::kCpu:
      return "cpu";
    case TrainDevice::kCuda:
      return "cuda";
  }
  return "?";
}

// training: and two_stage: (after model, objective and train.steps are read).
void read_two_stage(ConfigNode& root, const std::string& path, PretrainConfig& c) {
  const bool two_stage = root.choice("training", "joint", {"joint", "two-stage"}) == "two-stage";
  ConfigNode section = root.section("two_stage");
  if (!two_stage) {  // the shipped configs spell the key; describe() says it is unused
    c.generator_steps = section.get<int64_t>("generator_steps", 0);
    return;
  }
  c.training = Training::kTwoStage;
  const int64_t steps = section.require<int64_t>("generator_steps");
  c.generator_steps =
      in_range(path, steps, steps > 0 && steps < c.train.steps, "two_stage.generator_steps",
               str_cat("in (0, train.steps = ", c.train.steps, ")").c_str());
  ELECTRA_USER_CHECK((c.objective == Objective::kElectra || c.objective == Objective::kElectra15) &&
                         c.generator == GeneratorKind::kMlm,
                     path,
                     ": training: two-stage needs a trained MLM generator (objective electra or ",
                     "electra-15 with generator: mlm; got objective ", objective_name(c.objective),
                     ", generator ", generator_kind_name(c.generator), ")");
  // Stage 1 is maximum likelihood and stage 2 freezes the generator: nothing to train
  // adversarially. With every weight tied there is no second encoder to initialise, and gdes's
  // residual tables have no stage to train in (stage 1 does not run the discriminator).
  ELECTRA_USER_CHECK(c.generator_training == GeneratorTraining::kMle, path,
                     ": training: two-stage trains the generator by maximum likelihood in stage 1 "
                     "and freezes it in stage 2: generator_training: adversarial does not apply");
  ELECTRA_USER_CHECK(c.sharing == Sharing::kEmbeddings || c.sharing == Sharing::kNone, path,
                     ": training: two-stage needs sharing: embeddings or none (got ",
                     sharing_name(c.sharing), ": ",
                     c.sharing == Sharing::kAll ? "with every weight tied there is no second "
                                                  "encoder to initialise from the generator"
                                                : "its residual tables would train in stage 2 only",
                     ")");
  // Stage 2 starts the discriminator from the generator's encoder: the shapes must match.
  const EncoderConfig& d = c.model.discriminator;
  const EncoderConfig g = c.model.generator();
  auto size = [](const EncoderConfig& e) {
    return str_cat("hidden ", e.hidden, ", ", e.layers, " layers, ", e.heads, " heads, FFN ", e.ffn,
                   ", embedding ", e.embedding_size);
  };
  ELECTRA_USER_CHECK(g.hidden == d.hidden && g.layers == d.layers && g.heads == d.heads &&
                         g.ffn == d.ffn && g.embedding_size == d.embedding_size,
                     path,
                     ": training: two-stage needs a generator of the discriminator's size "
                     "(model.generator_multiplier 1, heads = hidden / 64, FFN = 4 x hidden): "
                     "generator ",
                     size(g), "; discriminator ", size(d));
}

PretrainConfig read_pretrain_config(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  ConfigNode root = ConfigNode::load(path);
  for (const std::string& o : overrides) root.apply_override(o);
  PretrainConfig c;
  c.path = path;
  const std::string objective = root.choice(
      "objective", "electra", {"electra", "electra-15", "mlm", "replace-mlm", "all-tokens-mlm"});
  ELECTRA_CHECK(parse_objective(objective, c.objective), "objective ", objective);
  if (root.choice("generator", "mlm", {"mlm", "unigram"}) == "unigram") {
    c.generator = GeneratorKind::kUnigram;
    ELECTRA_USER_CHECK(objective_wiring(c.objective).generator, path,
                       ": generator: unigram needs an objective with replacements (objective: ",
                       objective, " has none)");
  }
  const std::string sharing =
      root.choice("sharing", "embeddings", {"embeddings", "none", "all", "gdes"});
  for (Sharing s : {Sharing::kEmbeddings, Sharing::kNone, Sharing::kAll, Sharing::kGdes}) {
    if (sharing == sharing_name(s)) c.sharing = s;
  }
  if (root.choice("generator_training", "mle", {"mle", "adversarial"}) == "adversarial") {
    c.generator_training = GeneratorTraining::kAdversarial;
    ELECTRA_USER_CHECK(adversarial_applies(c.objective, c.generator), path,
                       ": generator_training: adversarial needs the MLM generator and the binary "
                       "discriminator (objective electra or electra-15, generator mlm), not "
                       "objective ",
                       objective, " with generator ", generator_kind_name(c.generator));
  }
  c.model_given = root.has("model");
  c.model = read_electra_config(root.section("model"));
  // Without a model section the sizes come from --init or --resume's checkpoint: the pretrainer
  // checks them then, with the same message.
  const std::string problem =
      c.model_given ? sharing_problem(c.model, c.sharing, c.objective, c.generator) : "";
  ELECTRA_USER_CHECK(problem.empty(), path, ": ", problem);

  ConfigNode data = root.section("data");
  c.shards = split_paths(data.require<std::string>("shards"), path);
  c.vocab = data.require<std::string>("vocab");
  ELECTRA_USER_CHECK(!c.vocab.empty(), path, ": data.vocab is empty");

  ConfigNode masking = root.section("masking");
  MaskingConfig& m = c.masking;
  const double mask_prob = masking.get<double>("mask_prob", m.mask_prob);
  m.mask_prob =
      in_range(path, mask_prob, mask_prob > 0 && mask_prob < 1, "masking.mask_prob", "in (0, 1)");
  const double token = masking.get<double>("mask_token_prob", m.mask_token_prob);
  m.mask_token_prob =
      in_range(path, token, token >= 0 && token <= 1, "masking.mask_token_prob", "in [0, 1]");
  m.linear_schedule =
      masking.choice("mask_prob_schedule", "constant", {"constant", "linear"}) == "linear";
  const double end = masking.get<double>("mask_prob_end", m.mask_prob);
  m.mask_prob_end = in_range(path, end, end > 0 && end < 1, "masking.mask_prob_end", "in (0, 1)");
  const double temperature = masking.get<double>("temperature", m.temperature);
  m.temperature = in_range(path, temperature, temperature > 0, "masking.temperature", "positive");
  ELECTRA_USER_CHECK(c.generator_training == GeneratorTraining::kMle || m.temperature == 1.0, path,
                     ": masking.temperature ", m.temperature,
                     " with generator_training: adversarial (REINFORCE needs the samples' own "
                     "distribution: temperature 1)");

  ConfigNode train = root.section("train");
  TrainConfig& t = c.train;
  const int64_t batch = train.get<int64_t>("batch_size", t.batch_size);
  t.batch_size = in_range(path, batch, batch > 0, "train.batch_size", "positive");
  const int64_t micro = train.get<int64_t>("micro_batch_size", 0);
  in_range(path, micro, micro >= 0, "train.micro_batch_size", "non-negative (0: batch_size)");
  t.micro_batch_size = micro == 0 ? t.batch_size : micro;
  t.micro_batch_auto = micro == 0;
  ELECTRA_USER_CHECK(t.batch_size % t.micro_batch_size == 0, path,
                     ": train.batch_size must be a multiple of train.micro_batch_size (got ",
                     t.batch_size, " and ", t.micro_batch_size, ")");
  const int64_t seq = train.get<int64_t>("seq_len", t.seq_len);
  const int64_t max_positions = c.model.discriminator.max_positions;
  ELECTRA_USER_CHECK(seq >= 8 && seq <= max_positions, path, ": train.seq_len must be in [8, ",
                     "model.max_positions = ", max_positions, "] (got ", seq, ")");
  t.seq_len = seq;
  check_attention_fits(c.model.discriminator, seq, path + ": model.attention");
  check_attention_fits(c.model.generator(), seq, path + ": model.attention (generator)");
  const int64_t steps = train.get<int64_t>("steps", t.steps);
  t.steps = in_range(path, steps, steps > 0, "train.steps", "positive");
  t.seed = train.get<uint64_t>("seed", t.seed);
  const double weight = train.get<double>("disc_weight", t.disc_weight);
  t.disc_weight = in_range(path, weight, weight >= 0, "train.disc_weight", "non-negative");
  const std::string device = train.choice("device", "auto", {"auto", "cpu", "cuda"});
  t.device = device == "cpu"    ? TrainDevice::kCpu
             : device == "cuda" ? TrainDevice::kCuda
                                : TrainDevice::kAuto;
  t.precision = train.choice("precision", "bf16", {"bf16", "f32"}) == "f32" ? Precision::F32
                                                                            : Precision::BF16;
  t.cuda_graph = train.get<bool>("cuda_graph", t.cuda_graph);
  t.overlap_generator = train.get<bool>("overlap_generator", t.overlap_generator);
  const int64_t threads = train.get<int64_t>("threads", t.threads);
  t.threads = in_range(path, threads, threads >= 0 && threads <= kMaxCpuThreads, "train.threads",
                       "in [0, 1024] (0: all cores)");

  read_two_stage(root, path, c);

  try {
    c.optimizer = read_optimizer_config(root.section("optimizer"), root.section("schedule"), steps);
  } catch (const UserError& e) {
    // Type errors already name the file and line; range errors only the key.
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw UserError(str_cat(path, ": ", what));
  }

  ConfigNode checkpoint = root.section("checkpoint");
  CheckpointConfig& k = c.checkpoint;
  k.dir = checkpoint.get<std::string>("dir", k.dir);
  ELECTRA_USER_CHECK(!k.dir.empty(), path, ": checkpoint.dir is empty");
  const int64_t every = checkpoint.get<int64_t>("every", k.every);
  k.every = in_range(path, every, every >= 0, "checkpoint.every", "non-negative (0: at the end)");
  const int64_t keep = checkpoint.get<int64_t>("keep", k.keep);
  k.keep = in_range(path, keep, keep >= 0, "checkpoint.keep", "non-negative (0: all)");

  const int64_t log_every = root.section("logging").get<int64_t>("every", c.log_every);
  c.log_every = in_range(path, log_every, log_every > 0, "logging.every", "positive");

  ConfigNode distributed = root.section("distributed");
  DistributedConfig& d = c.distributed;
  const double bucket_mb = distributed.get<double>("bucket_mb", d.bucket_mb);
  d.bucket_mb = in_range(path, bucket_mb, bucket_mb > 0, "distributed.bucket_mb", "positive");
  const double timeout = distributed.get<double>("timeout_s", d.timeout_s);
  d.timeout_s = in_range(path, timeout, timeout > 0, "distributed.timeout_s", "positive");

  root.finish();
  return c;
}

std::string canonical_text(const PretrainConfig& c) {
  std::ostringstream out;
  // Written only when not the default, so that the hashes of earlier (electra) runs stay valid.
  if (c.objective != Objective::kElectra)
    out << "objective=" << objective_name(c.objective) << "\n";
  if (c.generator != GeneratorKind::kMlm)
    out << "generator=" << generator_kind_name(c.generator) << "\n";
  if (c.sharing != Sharing::kEmbeddings) out << "sharing=" << sharing_name(c.sharing) << "\n";
  if (c.generator_training != GeneratorTraining::kMle)
    out << "generator_training=" << generator_training_name(c.generator_training) << "\n";
  if (c.training == Training::kTwoStage) {
    out << "training=two-stage\n"
        << "two_stage.generator_steps=" << c.generator_steps << "\n";
  }
  encoder_lines(out, "discriminator", c.model.discriminator);
  out << "generator_multiplier=" << exact(c.model.generator_multiplier) << "\n";
  for (const std::string& s : c.shards) out << "data.shard=" << s << "\n";
  out << "data.vocab=" << c.vocab << "\n"
      << "masking.mask_prob=" << exact(c.masking.mask_prob) << "\n"
      << "masking.mask_token_prob=" << exact(c.masking.mask_token_prob) << "\n"
      << "masking.temperature=" << exact(c.masking.temperature) << "\n";
  // Only with a schedule, so that the hashes of earlier runs stay valid.
  if (c.masking.linear_schedule) {
    out << "masking.mask_prob_schedule=linear\n"
        << "masking.mask_prob_end=" << exact(c.masking.mask_prob_end) << "\n";
  }
  const TrainConfig& t = c.train;
  out << "train.batch_size=" << t.batch_size << "\n"
      << "train.micro_batch_size=" << t.micro_batch_size << "\n"
      << "train.seq_len=" << t.seq_len << "\n"
      << "train.steps=" << t.steps << "\n"
      << "train.seed=" << t.seed << "\n"
      << "train.disc_weight=" << exact(t.disc_weight) << "\n"
      << "train.device=" << train_device_name(t.device) << "\n"
      << "train.precision=" << precision_name(t.precision) << "\n";
  const OptimizerConfig& o = c.optimizer;
  out << "optimizer.kind=" << optimizer_kind_name(o.kind) << "\n"
      << "optimizer.lr=" << exact(o.schedule.peak) << "\n"
      << "optimizer.beta1=" << exact(o.beta1) << "\n"
      << "optimizer.beta2=" << exact(o.beta2) << "\n"
      << "optimizer.eps=" << exact(o.eps) << "\n"
      << "optimizer.weight_decay=" << exact(o.weight_decay) << "\n"
      << "optimizer.bias_correction=" << (o.bias_correction ? "true" : "false") << "\n"
      << "optimizer.max_grad_norm=" << exact(o.max_grad_norm) << "\n"
      << "schedule.kind=" << schedule_name(o.schedule.kind) << "\n"
      << "schedule.warmup_steps=" << o.schedule.warmup_steps << "\n"
      << "schedule.total_steps=" << o.schedule.total_steps << "\n";
  return out.str();
}

uint64_t config_hash(const PretrainConfig& config) {
  const std::string text = canonical_text(config);
  return data::fnv1a64(text.data(), text.size());
}

std::string describe(const PretrainConfig& c, const std::string& device, Precision precision,
                     bool cuda) {
  const EncoderConfig& d = c.model.discriminator;
  const EncoderConfig g = c.model.generator();
  const TrainConfig& t = c.train;
  const OptimizerConfig& o = c.optimizer;
  // Masked slots per sequence as the masking op counts them: int((p + 0.005) * seq_len).
  const auto masked = static_cast<int64_t>((c.masking.mask_prob + 0.005) * t.seq_len);
  const StepFlops flops = step_flops(c.model, t.batch_size, t.seq_len, static_cast<double>(masked),
                                     c.objective, c.generator, c.generator_training);
  std::string shards;
  for (const std::string& s : c.shards) shards += (shards.empty() ? "" : ", ") + s;
  char flops_text[160];
  if (c.training == Training::kTwoStage) {  // each stage counts what it runs (models/flops.h)
    const double stage1 = phase_flops(flops, TrainingPhase::kGenerator).total();
    const double stage2 = phase_flops(flops, TrainingPhase::kDiscriminator).total();
    std::snprintf(flops_text, sizeof(flops_text),
                  "%.3g per step in stage 1, %.3g in stage 2, %.3g in total", stage1, stage2,
                  stage1 * static_cast<double>(c.generator_steps) +
                      stage2 * static_cast<double>(t.steps - c.generator_steps));
  } else {
    std::snprintf(flops_text, sizeof(flops_text), "%.3g per step, %.3g in total", flops.total(),
                  flops.total() * static_cast<double>(t.steps));
  }
  std::ostringstream out;
  out << "config " << c.path << " (hash " << std::hex << config_hash(c) << std::dec << ")\n"
      << "objective: " << objective_name(c.objective)
      << (objective_wiring(c.objective).bert_corruption
              ? " (BERT corruption: 80% [MASK], 10% random, 10% kept; masking.mask_token_prob "
                "applies to a generator's input only and is not used)"
              : "")
      << "\n"
      << "generator: "
      << (!objective_wiring(c.objective).generator ? "none (the objective has no replacements)"
          : c.generator == GeneratorKind::kUnigram
              ? "unigram (replacements drawn from the token counts of data.shards; no "
                "generator model, no generator loss)"
              : "mlm (trained alongside, its samples replace the masked tokens)")
      << "\n"
      << "generator_training: " << generator_training_name(c.generator_training)
      << (c.generator_training == GeneratorTraining::kAdversarial
              ? " (REINFORCE on the discriminator's loss at the samples, learned baseline; the "
                "generator's MLM loss is reported, not trained)"
              : "")
      << "\n"
      << "sharing: " << sharing_name(c.sharing)
      << (!objective_wiring(c.objective).generator || c.generator == GeneratorKind::kUnigram
              ? " (unused: there is no generator model)"
          : c.sharing == Sharing::kNone ? " (the generator has embedding tables of its own)"
          : c.sharing == Sharing::kAll
              ? " (every encoder weight tied: embeddings, projection and layers; each model its "
                "own head)"
          : c.sharing == Sharing::kGdes
              ? " (the discriminator's token, position and segment tables are sg(the generator's) "
                "+ residuals of its own; its LayerNorm its own)"
              : " (token, position and segment tables and the embedding LayerNorm tied)")
      << "\n"
      << "training: "
      << (c.training == Training::kJoint
              ? str_cat("joint (generator and discriminator trained together",
                        c.generator_steps != 0 ? "; two_stage.generator_steps unused" : "", ")")
              : str_cat("two-stage (updates 1-", c.generator_steps,
                        ": the generator alone with MLM; then the discriminator, initialised "
                        "from the generator's encoder, with ",
                        c.train.disc_weight, " x BCE for ", c.train.steps - c.generator_steps,
                        " updates while the generator is frozen",
                        c.sharing == Sharing::kEmbeddings
                            ? ", the shared embedding tables with it; sharing: none trains "
                              "the discriminator's own)"
                            : ")"))
      << "\n"
      << "model: discriminator " << d.layers << " layers, hidden " << d.hidden << ", " << d.heads
      << " heads, FFN " << d.ffn << ", embedding " << d.embedding_size << ", vocab " << d.vocab_size
      << "; generator hidden " << g.hidden << " (x" << c.model.generator_multiplier << "), FFN "
      << g.ffn << ", heads " << g.heads << "\n"
      << "data: " << shards << " (vocab " << c.vocab << ")\n"
      << "train: " << t.steps << " steps of " << t.batch_size << " x " << t.seq_len
      << " tokens (micro-batch " << t.micro_batch_size << ", accumulation "
      << t.accumulation_steps() << "), mask " << c.masking.mask_prob
      << (c.masking.linear_schedule
              ? str_cat(" -> ", c.masking.mask_prob_end, " (linear over the run)")
          : c.masking.mask_prob_end != c.masking.mask_prob
              ? std::string(" (masking.mask_prob_end unused: the schedule is constant)")
              : std::string())
      << ", disc weight " << t.disc_weight << ", seed " << t.seed << "\n"
      << "runs on: " << device << ", precision " << precision_name(precision) << " (config: device "
      << train_device_name(t.device) << ", precision " << precision_name(t.precision) << ")\n"
      << "updates: "
      << (!cuda          ? "eager (train.cuda_graph has no effect on the CPU)"
          : t.cuda_graph ? "replayed from CUDA graphs from the second one (train.cuda_graph)"
                         : "eager (train.cuda_graph: false)")
      << (!t.overlap_generator ? ""
          : !cuda              ? "; train.overlap_generator has no effect on the CPU"
                  : "; the generator's backward on a second stream beside the discriminator's "
                    "(train.overlap_generator)")
      << "\n"
      << kernels_line(d, cuda) << "optimizer: " << optimizer_kind_name(o.kind) << " lr "
      << o.schedule.peak << " (" << schedule_name(o.schedule.kind) << ", warm-up "
      << o.schedule.warmup_steps << "), betas " << o.beta1 << "/" << o.beta2 << ", eps " << o.eps
      << ", weight decay " << o.weight_decay << ", clip " << o.max_grad_norm << ", bias correction "
      << (o.bias_correction ? "on" : "off") << "\n"
      << "FLOPs (paper Appendix E conventions): " << flops_text << "\n";
  return out.str();
}

}  // namespace electra
