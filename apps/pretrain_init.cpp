// Continued pre-training from existing weights (contract in apps/pretrain_init.h).
#include "apps/pretrain_init.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <utility>

#include "data/vocab.h"
#include "engine/safetensors.h"
#include "models/generator.h"
#include "models/hf_checkpoint.h"
#include "train/trainer_checkpoint.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kPreTraining = "ElectraForPreTraining";
constexpr const char* kMaskedLm = "ElectraForMaskedLM";

bool has_file(const fs::path& dir, const char* name) {
  return fs::is_regular_file(dir / name);
}

// discriminator/ and generator/ model directories, as a checkpoint or an export holds them.
bool holds_pair(const fs::path& dir) {
  return has_file(dir / "discriminator", "config.json") &&
         has_file(dir / "generator", "config.json");
}

// A training checkpoint, or a run directory with checkpoint-* directories in it.
bool holds_training_state(const fs::path& dir) {
  if (has_file(dir, "trainer_state.json")) return true;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("checkpoint-", 0) == 0) {
      return true;
    }
  }
  return false;
}

// "an HF ElectraForMaskedLM model (a generator)", for messages.
std::string model_kind(const std::string& architecture) {
  if (architecture == kPreTraining) return str_cat("an HF ", kPreTraining, " (a discriminator)");
  if (architecture == kMaskedLm) return str_cat("an HF ", kMaskedLm, " (a generator)");
  if (architecture.empty()) {
    return "an HF ELECTRA model directory (config.json without architectures)";
  }
  return str_cat("an HF ", architecture, " (not a pre-training model: fine-tuned or encoder only)");
}

// " (it is the discriminator/ of P: --init P loads both models)" when `dir` is one half of P: for
// --init a checkpoint or pair directory, for --resume a training checkpoint; "" otherwise.
std::string parent_hint(const fs::path& dir, const std::string& flag) {
  const fs::path path = fs::absolute(dir).lexically_normal();
  const fs::path parent = path.parent_path();
  const std::string name = path.filename().string();
  if (name != "discriminator" && name != "generator") return "";
  const bool fits =
      flag == "--resume" ? has_file(parent, "trainer_state.json") : holds_pair(parent);
  if (!fits) return "";
  return str_cat(" (it is the ", name, "/ of ", parent.string(), ": ", flag, " ", parent.string(),
                 " loads both models)");
}

// The run's model from a discriminator's and a generator's config.json: the discriminator's
// sizes, and the generator multiplier that gives the generator's hidden size; the generator's
// other sizes must be the ones the engine derives (models/electra_config.h).
ElectraConfig pair_model(const std::string& discriminator_dir, const std::string& generator_dir) {
  const std::string disc_json = (fs::path(discriminator_dir) / "config.json").string();
  const std::string gen_json = (fs::path(generator_dir) / "config.json").string();
  ElectraConfig model;
  model.discriminator = read_hf_config(disc_json);
  const EncoderConfig generator = read_hf_config(gen_json);
  const EncoderConfig& d = model.discriminator;
  ELECTRA_USER_CHECK(generator.hidden <= d.hidden, gen_json, ": hidden_size is ", generator.hidden,
                     ", larger than the discriminator's ", d.hidden, " (", disc_json,
                     "): the engine's generator is at most as wide as its discriminator");
  model.generator_multiplier = static_cast<double>(generator.hidden) / d.hidden;
  const EncoderConfig derived = model.generator();
  auto same = [&](const char* key, int in_file, int expected, const char* rule) {
    ELECTRA_USER_CHECK(in_file == expected, gen_json, ": ", key, " is ", in_file, " but ", expected,
                       " for the discriminator of ", disc_json, " (", rule, ")");
  };
  const char* shared = "the generator shares the discriminator's embeddings";
  const char* rule = "the engine's generator: same layers, FFN = 4 x hidden, heads = hidden / 64";
  same("vocab_size", generator.vocab_size, derived.vocab_size, shared);
  same("embedding_size", generator.embedding_size, derived.embedding_size, shared);
  same("max_position_embeddings", generator.max_positions, derived.max_positions, shared);
  same("type_vocab_size", generator.type_vocab_size, derived.type_vocab_size, shared);
  same("num_hidden_layers", generator.layers, derived.layers, rule);
  same("intermediate_size", generator.ffn, derived.ffn, rule);
  same("num_attention_heads", generator.heads, derived.heads, rule);
  return model;
}

InitSource pair_source(const fs::path& discriminator_dir, const fs::path& generator_dir,
                       std::string description) {
  for (const fs::path& dir : {discriminator_dir, generator_dir}) {
    ELECTRA_USER_CHECK(has_file(dir, "model.safetensors") || !has_file(dir, "pytorch_model.bin"),
                       dir.string(),
                       ": holds pytorch_model.bin but no model.safetensors, the format the engine "
                       "reads: convert it with transformers (from_pretrained, then "
                       "save_pretrained(dir, safe_serialization=True))");
  }
  InitSource source;
  source.discriminator_dir = discriminator_dir.string();
  source.generator_dir = generator_dir.string();
  source.description = std::move(description);
  source.model = pair_model(source.discriminator_dir, source.generator_dir);
  return source;
}

// An `objective: mlm` checkpoint or export: discriminator/ is an ElectraForMaskedLM and there is
// no generator/.
bool holds_mlm_model(const fs::path& dir) {
  return has_file(dir / "discriminator", "config.json") &&
         !fs::exists(dir / "generator" / "config.json") &&
         read_hf_architecture((dir / "discriminator" / "config.json").string()) == kMaskedLm;
}

InitSource mlm_source(const fs::path& dir, const std::string& description) {
  const fs::path model_dir = dir / "discriminator";
  ELECTRA_USER_CHECK(has_file(model_dir, "model.safetensors"), model_dir.string(),
                     ": no model.safetensors");
  InitSource source;
  source.discriminator_dir = model_dir.string();
  source.description = str_cat(description, ", an mlm pre-training (no generator)");
  source.model.discriminator = read_hf_config((model_dir / "config.json").string());
  return source;
}

InitSource checkpoint_source(const std::string& checkpoint) {
  const fs::path dir(checkpoint);
  const TrainerState state = read_trainer_state(checkpoint);
  const std::string description = str_cat("checkpoint ", checkpoint, " (step ", state.step, ")");
  InitSource source = holds_mlm_model(dir)
                          ? mlm_source(dir, description)
                          : pair_source(dir / "discriminator", dir / "generator", description);
  source.run_dir = dir.parent_path().string();
  return source;
}

// --init-generator's directories: each one model of the expected architecture.
void check_single_model(const fs::path& dir, const char* flag, const char* expected) {
  ELECTRA_USER_CHECK(fs::is_directory(dir), flag, " ", dir.string(), ": no such directory");
  ELECTRA_USER_CHECK(!holds_pair(dir) && !holds_training_state(dir), flag, " ", dir.string(),
                     ": holds both models (a checkpoint or a discriminator/ and generator/ pair); "
                     "--init-generator is for a discriminator and a generator in separate "
                     "directories: give --init ",
                     dir.string(), " alone");
  ELECTRA_USER_CHECK(has_file(dir, "config.json"), flag, " ", dir.string(),
                     ": no config.json: not an HF model directory");
  const std::string architecture = read_hf_architecture((dir / "config.json").string());
  if (architecture.empty() || architecture == expected) return;
  if (architecture == kPreTraining || architecture == kMaskedLm) {
    throw UserError(str_cat(flag, " ", dir.string(), " is ", model_kind(architecture), ", not ",
                            model_kind(expected),
                            ": swap the directories of --init and --init-generator?"));
  }
  throw UserError(str_cat(flag, " ", dir.string(), " is ", model_kind(architecture),
                          "; continued pre-training needs an ", kPreTraining,
                          " discriminator and an ", kMaskedLm, " generator"));
}

// --init DIR where DIR is one HF model: what it is and what was probably meant.
[[noreturn]] void single_model_error(const fs::path& dir) {
  const std::string architecture = read_hf_architecture((dir / "config.json").string());
  const std::string is = str_cat("--init ", dir.string(), " is ", model_kind(architecture));
  const std::string hint = parent_hint(dir, "--init");
  if (architecture == kMaskedLm) {
    throw UserError(str_cat(is, hint,
                            "; --init needs the discriminator too: --init DISCRIMINATOR_DIR "
                            "--init-generator ",
                            dir.string()));
  }
  if (architecture == kPreTraining || architecture.empty()) {
    throw UserError(str_cat(
        is, hint, " without its generator: add --init-generator GENERATOR_DIR (an ", kMaskedLm,
        ", e.g. google/electra-small-generator beside "
        "google/electra-small-discriminator)"));
  }
  throw UserError(str_cat(is, "; continued pre-training needs an ", kPreTraining,
                          " discriminator and an ", kMaskedLm, " generator"));
}

// A vocabulary hash as build-vocab prints it.
std::string hash_text(uint64_t hash) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// One key of the run's model against the checkpoint's config.json.
void same_size(const char* config_key, double in_config, const char* json_key, double in_file,
               const std::string& json_path, const std::string& config_path) {
  ELECTRA_USER_CHECK(in_config == in_file, "--init: ", config_key, " is ", in_config, " in ",
                     config_path, " but ", json_key, " is ", in_file, " in ", json_path,
                     " (leave the model section out of the config to take the checkpoint's sizes)");
}

constexpr const char* kBinaryHead = "discriminator_predictions.";
bool is_mlm_head(const std::string& hf_name) {
  return hf_name.starts_with("generator_predictions.") || hf_name.starts_with("generator_lm_head.");
}

bool store_has(const ParameterStore& store, const std::function<bool(const std::string&)>& is) {
  return std::any_of(store.params().begin(), store.params().end(),
                     [&](const ParamInfo& p) { return is(p.name); });
}

// The discriminator-sized encoder (and its MLM head when the source has one and the model too)
// from one HF model directory; the heads of the directory the model does not take are skipped.
void load_encoder(Context& ctx, const ElectraPretrainer& model, const std::string& dir,
                  bool mlm_head_in_source) {
  const ParameterStore& store = model.store();
  HfModelLayout layout = discriminator_layout(store, model.config().discriminator);
  std::erase_if(layout.tensors, [&](const auto& tensor) {
    return tensor.first.starts_with(kBinaryHead) ||
           (is_mlm_head(tensor.first) && !mlm_head_in_source);
  });
  layout.ignored_prefixes = {kBinaryHead, "generator_predictions.", "generator_lm_head."};
  load_hf_model(ctx, store, layout, dir);
}

// "the generator and the binary head", for the message of an encoder-only load.
std::string fresh_parts(const ParameterStore& store, bool mlm_head_in_source) {
  const std::string d = "discriminator/";
  std::vector<std::string> parts;
  if (has_generator(store)) parts.emplace_back("the generator");
  if (store_has(store, [&](const std::string& n) { return n.starts_with(d + kBinaryHead); })) {
    parts.emplace_back("the binary head");
  }
  if (!mlm_head_in_source && store_has(store, [&](const std::string& n) {
        return n.starts_with(d) && is_mlm_head(n.substr(d.size()));
      })) {
    parts.emplace_back("the MLM head");
  }
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return text;
}

}  // namespace

InitSource find_init_source(const std::string& init, const std::string& init_generator) {
  const fs::path dir(init);
  ELECTRA_USER_CHECK(fs::is_directory(dir), "--init ", init, ": no such directory");
  if (!init_generator.empty()) {
    check_single_model(dir, "--init", kPreTraining);
    check_single_model(init_generator, "--init-generator", kMaskedLm);
    return pair_source(
        dir, init_generator,
        str_cat("HF models ", init, " (discriminator) and ", init_generator, " (generator)"));
  }
  if (holds_training_state(dir)) return checkpoint_source(resolve_checkpoint(init));
  if (holds_pair(dir)) {
    return pair_source(dir / "discriminator", dir / "generator", str_cat("HF models in ", init));
  }
  if (holds_mlm_model(dir)) return mlm_source(dir, str_cat("HF model in ", init));
  if (has_file(dir, "config.json")) single_model_error(dir);
  throw UserError(str_cat("--init ", init,
                          ": no checkpoint (trainer_state.json), run directory (checkpoint-*), "
                          "discriminator/ and generator/ pair or HF model (config.json) in it"));
}

void adopt_init_source(PretrainConfig& config, const InitSource& source) {
  const std::string disc_json = (fs::path(source.discriminator_dir) / "config.json").string();
  const std::string gen_json = (fs::path(source.generator_dir) / "config.json").string();
  const EncoderConfig& want = source.model.discriminator;
  const bool has_generator = !source.generator_dir.empty();
  if (!config.model_given) {
    // Without a generator in the source, the run's generator multiplier stays the config's.
    const double multiplier = config.model.generator_multiplier;
    config.model = source.model;
    if (!has_generator) config.model.generator_multiplier = multiplier;
    ELECTRA_USER_CHECK(config.train.seq_len <= want.max_positions, config.path,
                       ": train.seq_len is ", config.train.seq_len,
                       " but the model of --init has max_position_embeddings ", want.max_positions,
                       " (", disc_json,
                       "); --init does not grow the position table: pre-train the first phase "
                       "with model.max_positions at least the later phase's train.seq_len");
  } else {
    const EncoderConfig& have = config.model.discriminator;
    const std::string& path = config.path;
    same_size("model.vocab_size", have.vocab_size, "vocab_size", want.vocab_size, disc_json, path);
    same_size("model.embedding_size", have.embedding_size, "embedding_size", want.embedding_size,
              disc_json, path);
    same_size("model.hidden", have.hidden, "hidden_size", want.hidden, disc_json, path);
    same_size("model.layers", have.layers, "num_hidden_layers", want.layers, disc_json, path);
    same_size("model.heads", have.heads, "num_attention_heads", want.heads, disc_json, path);
    same_size("model.ffn", have.ffn, "intermediate_size", want.ffn, disc_json, path);
    same_size("model.max_positions", have.max_positions, "max_position_embeddings",
              want.max_positions, disc_json, path);
    // Not YAML keys: the engine's defaults, which HF checkpoints have too.
    same_size("the type vocabulary", have.type_vocab_size, "type_vocab_size", want.type_vocab_size,
              disc_json, path);
    same_size("layer_norm_eps", have.layer_norm_eps, "layer_norm_eps", want.layer_norm_eps,
              disc_json, path);
    ELECTRA_USER_CHECK(
        !has_generator || config.model.generator().hidden == source.model.generator().hidden,
        "--init: model.generator_multiplier ", config.model.generator_multiplier, " in ", path,
        " gives a generator of hidden size ", config.model.generator().hidden,
        " but hidden_size is ", source.model.generator().hidden, " in ", gen_json,
        " (set model.generator_multiplier to ", source.model.generator_multiplier,
        " or leave the model section out to take the checkpoint's sizes)");
  }

  const data::Vocab vocab = data::Vocab::load(config.vocab);
  ELECTRA_USER_CHECK(static_cast<int64_t>(vocab.size()) == want.vocab_size, "--init: data.vocab ",
                     config.vocab, " has ", vocab.size(), " tokens but the checkpoint has ",
                     want.vocab_size, " (vocab_size in ", disc_json, ")");
  for (const std::string& dir : {source.discriminator_dir, source.generator_dir}) {
    if (dir.empty()) continue;
    const fs::path own = fs::path(dir) / "vocab.txt";
    if (!fs::is_regular_file(own)) continue;
    const uint64_t hash = data::Vocab::load(own.string()).hash();
    ELECTRA_USER_CHECK(hash == vocab.hash(), "--init: data.vocab ", config.vocab, " (hash ",
                       hash_text(vocab.hash()), ") is not the checkpoint's vocabulary ",
                       own.string(), " (hash ", hash_text(hash),
                       "): build the shards with the checkpoint's vocab.txt (electra build-data "
                       "--vocab ",
                       own.string(), ")");
  }

  if (!source.run_dir.empty()) {
    std::error_code ec;
    ELECTRA_USER_CHECK(!fs::equivalent(config.checkpoint.dir, source.run_dir, ec),
                       "--init: checkpoint.dir ", config.checkpoint.dir,
                       " is the run directory the weights come from; the new run's checkpoints "
                       "would replace its: give the new run a checkpoint.dir of its own");
  }
}

std::string resolve_resume_checkpoint(const std::string& dir) {
  const fs::path path(dir);
  if (!fs::is_directory(path) || holds_training_state(path)) return resolve_checkpoint(dir);
  if (holds_pair(path)) {
    throw UserError(str_cat("--resume ", dir,
                            ": model directories (discriminator/, generator/) without "
                            "trainer_state.json (an export or HF models): there is no optimizer "
                            "state, step or data position to resume; to pre-train further from "
                            "these weights, start a new run with --init ",
                            dir));
  }
  if (has_file(path, "config.json")) {
    const std::string architecture = read_hf_architecture((path / "config.json").string());
    const std::string hint = parent_hint(path, "--resume");
    if (!hint.empty()) {
      throw UserError(str_cat("--resume ", dir, " is ", model_kind(architecture), hint));
    }
    const std::string start = architecture == kMaskedLm
                                  ? str_cat("--init DISCRIMINATOR_DIR --init-generator ", dir)
                                  : str_cat("--init ", dir, " --init-generator GENERATOR_DIR");
    throw UserError(str_cat("--resume ", dir, " is ", model_kind(architecture),
                            ", not a training checkpoint of this engine (no trainer_state.json); "
                            "to pre-train further from HF weights, start a new run with ",
                            start));
  }
  return resolve_checkpoint(dir);
}

std::optional<InitSource> resolve_start(PretrainConfig& config, const std::string& init,
                                        const std::string& init_generator,
                                        const std::string& resume) {
  ELECTRA_USER_CHECK(init.empty() || resume.empty(),
                     "--init and --resume exclude each other: --resume continues a run (its "
                     "optimizer state, schedule and data position, with the same config); --init "
                     "starts a new run from a checkpoint's weights");
  ELECTRA_USER_CHECK(init_generator.empty() || !init.empty(),
                     "--init-generator needs --init DISCRIMINATOR_DIR");
  if (init.empty()) {
    // The directory is checked here, before the device opens, so a wrong one fails at once.
    if (!resume.empty()) {
      const std::string checkpoint = resolve_resume_checkpoint(resume);
      if (!config.model_given) config.model = checkpoint_source(checkpoint).model;
    }
    return std::nullopt;
  }
  InitSource source = find_init_source(init, init_generator);
  adopt_init_source(config, source);
  source.fresh_seed = config.train.seed;
  return source;
}

void load_init_weights(Context& ctx, ElectraPretrainer& model, const InitSource& source,
                       bool report) {
  if (source.generator_dir.empty() || !has_generator(model.store())) {
    // One model in the source or one in the run: the encoder, and the MLM head when both have it.
    const bool mlm_head_in_source = source.generator_dir.empty();
    model.init_weights(ctx, source.fresh_seed);
    load_encoder(ctx, model, source.discriminator_dir, mlm_head_in_source);
    model.weights().refresh_compute(ctx);
    if (!report) return;
    const std::string fresh = fresh_parts(model.store(), mlm_head_in_source);
    const std::string message = str_cat(
        "pretrain: weights from ", source.description,
        fresh.empty()
            ? ""
            : str_cat(": ", fresh, " start from fresh weights (seed ", source.fresh_seed, ")"),
        mlm_head_in_source ? "" : "; the checkpoint's generator is not used",
        "; optimizer state, learning-rate schedule and data start at step 0\n");
    std::fputs(message.c_str(), stderr);
    return;
  }
  // generator_training: adversarial from a generator without a baseline (an mle run's): the
  // baseline starts fresh (the pair's load leaves it as init_weights set it).
  const std::string baseline = ElectraGenerator::kAdversarialBaseline;
  const bool fresh_baseline =
      store_has(model.store(),
                [&](const std::string& n) {
                  return n.starts_with(ElectraGenerator::kPrefix + baseline);
                }) &&
      SafetensorsFile::read((fs::path(source.generator_dir) / "model.safetensors").string())
              .find(baseline + "weight") == nullptr;
  if (fresh_baseline) model.init_weights(ctx, source.fresh_seed);
  const std::vector<SharedTableDifference> differences =
      load_pretrainer_pair(ctx, model, source.discriminator_dir, source.generator_dir);
  if (!report) return;
  std::fprintf(stderr,
               "pretrain: weights from %s%s; optimizer state, learning-rate schedule and data "
               "start at step 0\n",
               source.description.c_str(),
               fresh_baseline ? " (the adversarial baseline starts from fresh weights)" : "");
  if (differences.empty()) return;
  const SharedTableDifference* largest = &differences.front();
  for (const SharedTableDifference& d : differences) {
    if (d.largest > largest->largest) largest = &d;
  }
  std::fprintf(stderr,
               "pretrain: the generator's copy of the shared %s differs from the "
               "discriminator's in %zu tensors (largest difference %.3g, %s); the "
               "discriminator's (%s) is used for both models\n",
               model.options().sharing == Sharing::kAll ? "encoder weights (sharing: all)"
                                                        : "embedding tables",
               differences.size(), largest->largest, largest->name.c_str(),
               source.discriminator_dir.c_str());
}

}  // namespace electra::apps
