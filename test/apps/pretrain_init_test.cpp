// Continued pre-training (apps/pretrain_init.h): --init from the HF pair written by
// test/fixtures/make_hf_fixtures.py (test/fixtures/hf_tiny) gives exactly the HF weights, with the
// model sizes taken from config.json when the YAML has no model section; --init from a checkpoint
// or run directory of ours; the mismatch errors (sizes, generator multiplier, vocabulary size and
// hash, seq_len, the run's own checkpoint.dir); what a directory of the wrong kind is said to be
// (a generator given to --init, an HF directory given to --resume); and the
// discriminator's copy of the shared embedding tables winning when the two models' differ.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/pretrain_init.h"
#include "data/vocab.h"
#include "engine/safetensors.h"
#include "models/hf_checkpoint.h"
#include "test/models/tiny_pretrainer.h"
#include "train/trainer_checkpoint.h"

using namespace electra;
using namespace electra::apps;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(ELECTRA_SOURCE_DIR) + "/test/fixtures/hf_tiny";

// A fresh directory per test case (ctest runs the cases in parallel).
fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("pretrain_init_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A vocabulary of `size` tokens: the five specials, then "w5", "w6", ... in `order` (+1 / -1).
std::string write_vocab(const fs::path& path, size_t size, int order = 1) {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::vector<std::string> words;
  for (size_t i = tokens.size(); i < size; ++i) words.push_back("w" + std::to_string(i));
  if (order < 0) std::reverse(words.begin(), words.end());
  tokens.insert(tokens.end(), words.begin(), words.end());
  data::Vocab::from_tokens(tokens, path.string()).save(path.string());
  return path.string();
}

// A run config in dir/run.yaml: `model` is the YAML of the model section ("" leaves it out).
PretrainConfig run_config(const fs::path& dir, const std::string& model, const std::string& vocab,
                          int64_t seq_len = 16) {
  const std::string path = (dir / "run.yaml").string();
  std::ofstream(path) << model << "data:\n  shards: unused\n  vocab: " << vocab
                      << "\ntrain:\n  seq_len: " << seq_len << "\n  batch_size: 3\n"
                      << "checkpoint:\n  dir: " << (dir / "new_run").string() << "\n";
  return read_pretrain_config(path, {});
}

// The tiny fixture's sizes as a YAML model section (test/models/tiny_pretrainer.h).
std::string tiny_model_yaml(int hidden = 32, double multiplier = 0.5) {
  return "model:\n  preset: tiny\n  vocab_size: 97\n  embedding_size: 16\n  hidden: " +
         std::to_string(hidden) + "\n  layers: 2\n  heads: 2\n  ffn: 64\n  max_positions: 32\n" +
         "  hidden_dropout: 0\n  attention_dropout: 0\n  generator_multiplier: " +
         std::to_string(multiplier) + "\n";
}

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  const std::string message = user_error(f);
  INFO("message: " << message);
  REQUIRE(!message.empty());
  CHECK(message.find('\n') == std::string::npos);
  for (const std::string& part : parts) CHECK_THAT(message, Contains(part));
}

// A parameter's values as the store holds them.
std::vector<float> values(const ParameterStore& store, const std::string& name) {
  const Tensor t = store.param(name);
  return std::vector<float>(t.ptr<float>(), t.ptr<float>() + t.numel());
}

// A tensor of an HF model directory's model.safetensors, as f32.
std::vector<float> file_values(const std::string& dir, const std::string& name) {
  const SafetensorsFile file = SafetensorsFile::read(dir + "/model.safetensors");
  const SafetensorsEntry* e = file.find(name);
  REQUIRE(e != nullptr);
  std::vector<float> out(static_cast<size_t>(e->numel()));
  file.read_f32(*e, out.data());
  return out;
}

// Every store parameter equals the file it comes from, bit for bit: "discriminator/<name>" (the
// shared tables included) from the discriminator's directory, "generator/<name>" from the
// generator's.
void expect_weights_of(const ParameterStore& store, const std::string& discriminator_dir,
                       const std::string& generator_dir) {
  int compared = 0;
  for (const ParamInfo& p : store.params()) {
    const size_t slash = p.name.find('/');
    const std::string model = p.name.substr(0, slash), hf_name = p.name.substr(slash + 1);
    const std::string& dir = model == "discriminator" ? discriminator_dir : generator_dir;
    INFO(p.name);
    CHECK(values(store, p.name) == file_values(dir, hf_name));
    ++compared;
  }
  CHECK(compared == static_cast<int>(store.params().size()));
}

PretrainOptions options_of(Objective objective) {
  PretrainOptions options = test::tiny_options();
  options.objective = objective;
  return options;
}

struct Run {
  Context ctx = Context::cpu(0, Precision::F32);
  ElectraPretrainer model;
  explicit Run(const ElectraConfig& config, Objective objective = Objective::kElectra)
      : model(ctx, config, options_of(objective)) {
    model.init_weights(ctx, 7);  // random weights that the load must replace
  }
};

// A checkpoint of ours, step 5, in dir/run (with the vocabulary beside the models).
std::string write_checkpoint(const fs::path& dir, const std::string& vocab_path,
                             Objective objective = Objective::kElectra) {
  Run run(test::tiny_electra_config(), objective);
  Arena arena("optimizer", Device::CPU,
              Optimizer::state_bytes(run.model.store(), OptimizerKind::kAdamW));
  Optimizer optimizer(run.ctx, run.model.store(), OptimizerConfig{}, arena);
  TrainerState state;
  state.step = 5;
  const data::Vocab vocab = data::Vocab::load(vocab_path);
  return save_checkpoint(run.ctx, run.model, optimizer, state, (dir / "run").string(), 0, &vocab);
}

}  // namespace

TEST_CASE("init from the HF fixture pair: the sizes of config.json, exactly the HF weights",
          "[unit]") {
  const fs::path dir = temp_dir("hf_pair");
  const std::string vocab = write_vocab(dir / "vocab.txt", 97);
  for (const bool separate : {false, true}) {
    INFO((separate ? "--init DISC --init-generator GEN" : "--init PAIR_DIR"));
    PretrainConfig config = run_config(dir, "", vocab);
    CHECK_FALSE(config.model_given);
    const std::optional<InitSource> source =
        separate ? resolve_start(config, kFixture + "/discriminator", kFixture + "/generator", "")
                 : resolve_start(config, kFixture, "", "");
    REQUIRE(source);
    const ElectraConfig want = test::tiny_electra_config();
    const EncoderConfig& d = config.model.discriminator;
    CHECK(d.vocab_size == 97);
    CHECK(d.embedding_size == 16);
    CHECK(d.hidden == 32);
    CHECK(d.layers == 2);
    CHECK(d.heads == 2);
    CHECK(d.ffn == 64);
    CHECK(d.max_positions == 32);
    CHECK(d.hidden_dropout == 0.0f);
    CHECK(config.model.generator_multiplier == want.generator_multiplier);
    CHECK(canonical_text(config).find("discriminator.hidden=32\n") != std::string::npos);

    Run run(config.model);
    load_init_weights(run.ctx, run.model, *source, false);
    expect_weights_of(run.model.store(), kFixture + "/discriminator", kFixture + "/generator");
  }
  // With a model section, equal sizes are accepted and the YAML's model is kept.
  PretrainConfig config = run_config(dir, tiny_model_yaml(), vocab);
  CHECK(config.model_given);
  REQUIRE(resolve_start(config, kFixture, "", ""));
}

TEST_CASE("init from a checkpoint or run directory of ours takes its newest weights", "[unit]") {
  const fs::path dir = temp_dir("ours");
  const std::string vocab = write_vocab(dir / "vocab.txt", 97);
  const std::string checkpoint = write_checkpoint(dir, vocab);
  for (const std::string& init : {(dir / "run").string(), checkpoint}) {
    PretrainConfig config = run_config(dir, "", vocab);
    const std::optional<InitSource> source = resolve_start(config, init, "", "");
    REQUIRE(source);
    CHECK_THAT(source->description, Contains("(step 5)"));
    Run run(config.model);
    load_init_weights(run.ctx, run.model, *source, false);
    expect_weights_of(run.model.store(), checkpoint + "/discriminator", checkpoint + "/generator");
  }
  // The new run must not write into the run it starts from.
  PretrainConfig config = run_config(dir, "", vocab);
  config.checkpoint.dir = (dir / "run").string();
  expect_error([&] { resolve_start(config, checkpoint, "", ""); },
               {"checkpoint.dir", "the run directory the weights come from"});
  // --resume without a model section takes the checkpoint's sizes too (a run started with
  // --init and no model section resumes with the same config).
  PretrainConfig resumed = run_config(dir, "", vocab);
  CHECK_FALSE(resolve_start(resumed, "", "", (dir / "run").string()));
  CHECK(canonical_text(resumed) == canonical_text(run_config(dir, tiny_model_yaml(), vocab)));
}

TEST_CASE("init refuses sizes, vocabularies and sequence lengths that differ", "[unit]") {
  const fs::path dir = temp_dir("mismatch");
  const std::string vocab = write_vocab(dir / "vocab.txt", 97);
  SECTION("a model section with other sizes names the key, the file and both values") {
    PretrainConfig config = run_config(dir, tiny_model_yaml(64), vocab);
    expect_error([&] { resolve_start(config, kFixture, "", ""); },
                 {"model.hidden is 64", "hidden_size is 32", "discriminator/config.json",
                  "leave the model section out"});
  }
  SECTION("a generator multiplier that gives another generator width") {
    PretrainConfig config = run_config(dir, tiny_model_yaml(32, 0.25), vocab);
    expect_error([&] { resolve_start(config, kFixture, "", ""); },
                 {"model.generator_multiplier 0.25", "hidden size 8", "hidden_size is 16",
                  "generator/config.json", "to 0.5"});
  }
  SECTION("a vocabulary of another size") {
    PretrainConfig config = run_config(dir, "", write_vocab(dir / "big.txt", 98));
    expect_error([&] { resolve_start(config, kFixture, "", ""); },
                 {"big.txt has 98 tokens", "the checkpoint has 97"});
  }
  SECTION("a vocabulary of the same size but another hash than the checkpoint's vocab.txt") {
    const std::string checkpoint = write_checkpoint(dir, vocab);
    const std::string other = write_vocab(dir / "other.txt", 97, -1);
    REQUIRE(data::Vocab::load(vocab).hash() != data::Vocab::load(other).hash());
    PretrainConfig config = run_config(dir, "", other);
    expect_error([&] { resolve_start(config, checkpoint, "", ""); },
                 {"data.vocab " + other, "is not the checkpoint's vocabulary",
                  checkpoint + "/discriminator/vocab.txt", "hash"});
  }
  SECTION("train.seq_len beyond the checkpoint's positions") {
    PretrainConfig config = run_config(dir, "", vocab, 64);
    expect_error([&] { resolve_start(config, kFixture, "", ""); },
                 {"train.seq_len is 64", "max_position_embeddings 32"});
  }
  SECTION("a generator whose sizes are not the engine's generator for its discriminator") {
    fs::copy(kFixture, dir / "pair", fs::copy_options::recursive);
    const std::string json = (dir / "pair" / "generator" / "config.json").string();
    nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
    j["intermediate_size"] = 32;
    std::ofstream(json) << j.dump(2);
    PretrainConfig config = run_config(dir, "", vocab);
    expect_error([&] { resolve_start(config, (dir / "pair").string(), "", ""); },
                 {"intermediate_size is 32 but 64", "FFN = 4 x hidden"});
  }
  SECTION("a directory with pytorch_model.bin only") {
    fs::copy(kFixture, dir / "pair", fs::copy_options::recursive);
    fs::remove(dir / "pair" / "generator" / "model.safetensors");
    std::ofstream(dir / "pair" / "generator" / "pytorch_model.bin") << "x";
    PretrainConfig config = run_config(dir, "", vocab);
    expect_error([&] { resolve_start(config, (dir / "pair").string(), "", ""); },
                 {"pytorch_model.bin", "safe_serialization=True"});
  }
}

TEST_CASE("a directory of the wrong kind is named and the probable intent given", "[unit]") {
  const fs::path dir = temp_dir("wrong_kind");
  const std::string vocab = write_vocab(dir / "vocab.txt", 97);
  const std::string disc = kFixture + "/discriminator", gen = kFixture + "/generator";
  PretrainConfig config = run_config(dir, "", vocab);
  SECTION("--init with a generator alone") {
    expect_error([&] { resolve_start(config, gen, "", ""); },
                 {"is an HF ElectraForMaskedLM (a generator)", "--init needs the discriminator",
                  "--init-generator " + gen, "--init " + kFixture});
  }
  SECTION("--init with a discriminator alone") {
    expect_error([&] { resolve_start(config, disc, "", ""); },
                 {"ElectraForPreTraining (a discriminator)", "without its generator",
                  "add --init-generator"});
  }
  SECTION("--init and --init-generator swapped") {
    expect_error([&] { resolve_start(config, gen, disc, ""); },
                 {"--init " + gen + " is an HF ElectraForMaskedLM", "swap"});
  }
  SECTION("--init-generator with a pair directory") {
    expect_error([&] { resolve_start(config, kFixture, gen, ""); },
                 {"holds both models", "give --init " + kFixture + " alone"});
  }
  SECTION("--init with a fine-tuned model") {
    fs::create_directories(dir / "cls");
    std::ofstream(dir / "cls" / "config.json")
        << R"({"model_type": "electra", "architectures": ["ElectraForSequenceClassification"]})";
    expect_error([&] { resolve_start(config, (dir / "cls").string(), "", ""); },
                 {"ElectraForSequenceClassification (not a pre-training model"});
  }
  SECTION("--init with a directory of something else") {
    expect_error([&] { resolve_start(config, dir.string(), "", ""); },
                 {"no checkpoint (trainer_state.json)"});
    expect_error([&] { resolve_start(config, (dir / "nowhere").string(), "", ""); },
                 {"no such directory"});
  }
  SECTION("--init with --resume, --init-generator without --init") {
    expect_error([&] { resolve_start(config, kFixture, "", kFixture); },
                 {"--init and --resume exclude each other"});
    expect_error([&] { resolve_start(config, "", gen, ""); }, {"--init-generator needs --init"});
  }
  SECTION("--resume with HF directories") {
    expect_error([&] { resolve_resume_checkpoint(kFixture); },
                 {"without trainer_state.json", "start a new run with --init " + kFixture});
    fs::create_directories(dir / "released");
    fs::copy(disc, dir / "released");
    const std::string released = (dir / "released").string();
    expect_error([&] { resolve_resume_checkpoint(released); },
                 {"is an HF ElectraForPreTraining (a discriminator)",
                  "not a training checkpoint of this engine",
                  "--init " + released + " --init-generator GENERATOR_DIR"});
    expect_error(
        [&] { resolve_resume_checkpoint(gen); },
        {"ElectraForMaskedLM (a generator)", "--init DISCRIMINATOR_DIR --init-generator " + gen});
    const std::string checkpoint = write_checkpoint(dir, vocab);
    expect_error([&] { resolve_resume_checkpoint(checkpoint + "/generator"); },
                 {"(it is the generator/ of " + checkpoint + ": --resume " + checkpoint});
  }
}

TEST_CASE("shared embedding tables that differ between the two models: the discriminator's wins",
          "[unit]") {
  const fs::path dir = temp_dir("shared");
  // The discriminator of one model and the generator of another (other random tables).
  Run a(test::tiny_electra_config()), b(test::tiny_electra_config());
  b.model.init_weights(b.ctx, 8);
  const ParameterStore& store = a.model.store();
  const ElectraConfig config = test::tiny_electra_config();
  save_hf_model(a.ctx, store, discriminator_layout(store, config.discriminator),
                (dir / "disc").string());
  save_hf_model(b.ctx, b.model.store(), generator_layout(b.model.store(), config.generator()),
                (dir / "gen").string());
  // The engine's own checkpoints must agree, and are refused otherwise.
  fs::create_directories(dir / "pair");
  fs::copy(dir / "disc", dir / "pair" / "discriminator", fs::copy_options::recursive);
  fs::copy(dir / "gen", dir / "pair" / "generator", fs::copy_options::recursive);
  Run target(config);
  CHECK_THAT(user_error([&] {
               load_pretrainer_models(target.ctx, target.model, (dir / "pair").string());
             }),
             Contains("differs from its copy"));

  const std::vector<SharedTableDifference> differences = load_pretrainer_pair(
      target.ctx, target.model, (dir / "disc").string(), (dir / "gen").string());
  // The word, position and token type tables; the embedding LayerNorm is (1, 0) in both inits.
  CHECK(differences.size() == 3);
  for (const SharedTableDifference& d : differences) {
    CHECK_THAT(d.name, Contains("electra.embeddings."));
    CHECK(d.largest > 0);
  }
  expect_weights_of(target.model.store(), (dir / "disc").string(), (dir / "gen").string());
  CHECK(values(target.model.store(), "discriminator/electra.embeddings.word_embeddings.weight") ==
        values(store, "discriminator/electra.embeddings.word_embeddings.weight"));
}

TEST_CASE("init from an mlm checkpoint (no generator), and mlm from an electra checkpoint",
          "[unit]") {
  const fs::path dir = temp_dir("mlm");
  const std::string vocab = write_vocab(dir / "vocab.txt", 97);
  const std::string checkpoint = write_checkpoint(dir, vocab, Objective::kMlm);
  const std::string disc = checkpoint + "/discriminator";
  REQUIRE_FALSE(fs::exists(checkpoint + "/generator"));
  PretrainConfig config = run_config(dir, "", vocab);
  const double multiplier = config.model.generator_multiplier;
  const std::optional<InitSource> source = resolve_start(config, checkpoint, "", "");
  REQUIRE(source);
  CHECK_THAT(source->description, Contains("an mlm pre-training (no generator)"));
  CHECK(source->generator_dir.empty());
  CHECK(source->fresh_seed == config.train.seed);
  // The discriminator's sizes come from config.json; the generator's multiplier stays the run's.
  CHECK(config.model.discriminator.hidden == test::tiny_electra_config().discriminator.hidden);
  CHECK(config.model.generator_multiplier == multiplier);

  // What a fresh model of the run's seed holds, for the parts the checkpoint lacks.
  auto fresh = [&](Objective objective) {
    auto run = std::make_unique<Run>(config.model, objective);
    run->model.init_weights(run->ctx, source->fresh_seed);
    return run;
  };
  for (const Objective objective :
       {Objective::kMlm, Objective::kElectra, Objective::kReplaceMlm, Objective::kAllTokensMlm}) {
    INFO(objective_name(objective));
    Run run(config.model, objective);
    load_init_weights(run.ctx, run.model, *source, false);
    const auto reference = fresh(objective);
    int from_file = 0, from_fresh = 0;
    for (const ParamInfo& p : run.model.store().params()) {
      INFO(p.name);
      const std::string d = "discriminator/";
      const bool encoder = p.name.starts_with(d + "electra.");
      const bool mlm_head = p.name.starts_with(d + "generator_");
      if (encoder || mlm_head) {
        CHECK(values(run.model.store(), p.name) == file_values(disc, p.name.substr(d.size())));
        ++from_file;
      } else {  // the generator, the binary head
        CHECK(values(run.model.store(), p.name) == values(reference->model.store(), p.name));
        ++from_fresh;
      }
    }
    CHECK(from_file > 0);
    CHECK((from_fresh == 0) == (objective == Objective::kMlm));
  }

  // objective mlm from an ELECTRA checkpoint: the discriminator's encoder; a fresh MLM head.
  const fs::path electra_dir = dir / "electra";
  fs::create_directories(electra_dir);
  const std::string electra = write_checkpoint(electra_dir, vocab);
  PretrainConfig mlm_config = run_config(electra_dir, "", vocab);
  const std::optional<InitSource> pair = resolve_start(mlm_config, electra, "", "");
  REQUIRE(pair);
  Run run(mlm_config.model, Objective::kMlm);
  load_init_weights(run.ctx, run.model, *pair, false);
  const auto reference = fresh(Objective::kMlm);
  for (const ParamInfo& p : run.model.store().params()) {
    INFO(p.name);
    const std::string d = "discriminator/";
    if (p.name.starts_with(d + "electra.")) {
      CHECK(values(run.model.store(), p.name) ==
            file_values(electra + "/discriminator", p.name.substr(d.size())));
    } else {
      CHECK(values(run.model.store(), p.name) == values(reference->model.store(), p.name));
    }
  }
}
