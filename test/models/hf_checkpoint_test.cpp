// HF checkpoint I/O (models/hf_checkpoint.h): a pre-trainer's weights survive save and load bit
// for bit, the files have HF's names, dtype and metadata, and a checkpoint that does not fit the
// model (wrong shape, missing or unexpected tensor, non-float dtype, config mismatch, generator
// and discriminator disagreeing on the shared tables) is refused with a message naming the file
// and the tensor or key, before anything is written into the model.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/safetensors.h"
#include "models/hf_checkpoint.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case (ctest runs the cases in parallel).
std::string temp_dir(const std::string& name) {
  const fs::path dir = fs::path(ELECTRA_HF_TEST_TMP_DIR) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Every parameter's values, by name (the store's padding is not part of the model).
std::vector<std::vector<double>> snapshot(const ParameterStore& store) {
  std::vector<std::vector<double>> out;
  for (const ParamInfo& p : store.params()) {
    const Tensor t = store.param(p.name);
    std::vector<double> v(static_cast<size_t>(p.numel));
    for (int64_t i = 0; i < p.numel; ++i) {
      v[i] = t.dtype == DType::F64 ? t.ptr<double>()[i] : t.ptr<float>()[i];
    }
    out.push_back(std::move(v));
  }
  return out;
}

// The bytes of one tensor of a safetensors file.
std::vector<uint8_t> file_bytes(const SafetensorsFile& file, const SafetensorsEntry& e) {
  return std::vector<uint8_t>(file.data(e), file.data(e) + e.nbytes);
}

// The message of the UserError that `f` throws, or "" when it throws none.
std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// Rewrites dir/model.safetensors through `edit` (which may drop, change or add tensors).
void edit_weights(const std::string& dir,
                  const std::function<void(std::vector<NamedTensor>&)>& edit,
                  std::vector<std::vector<uint8_t>>& storage) {
  const std::string path = dir + "/model.safetensors";
  const SafetensorsFile file = SafetensorsFile::read(path);
  std::vector<NamedTensor> tensors;
  for (const SafetensorsEntry& e : file.entries()) {
    REQUIRE(e.dtype == "F32");
    storage.emplace_back(file.data(e), file.data(e) + e.nbytes);
    Tensor t;
    t.data = storage.back().data();
    t.dtype = DType::F32;
    t.rank = static_cast<int>(e.shape.size());
    for (size_t d = 0; d < e.shape.size(); ++d) t.shape[d] = e.shape[d];
    tensors.push_back(NamedTensor{e.name, t});
  }
  edit(tensors);
  write_safetensors(path, tensors, {{"format", "pt"}});
}

void edit_config(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
  const std::string path = dir + "/config.json";
  nlohmann::json j;
  {
    std::ifstream in(path);
    in >> j;
  }
  edit(j);
  std::ofstream(path) << j.dump(2);
}

struct Models {
  Context ctx = Context::cpu(0, Precision::F32);
  ElectraPretrainer source, target;

  explicit Models(const ElectraConfig& config = test::tiny_electra_config(),
                  const PretrainOptions& options = test::tiny_options())
      : source(ctx, config, options), target(ctx, config, options) {
    source.init_weights(ctx, 1);
    target.init_weights(ctx, 2);
  }
};

// Loading the checkpoint at `dir` into `target` fails with a UserError whose message contains
// every one of `parts`, and leaves every parameter of `target` unchanged.
void expect_refused(Models& m, const std::string& dir, const std::vector<std::string>& parts) {
  const auto before = snapshot(m.target.store());
  const std::string message = user_error([&] { load_pretrainer_models(m.ctx, m.target, dir); });
  INFO("message: " << message);
  REQUIRE(!message.empty());
  for (const std::string& part : parts) CHECK_THAT(message, Contains(part));
  CHECK(snapshot(m.target.store()) == before);
}

}  // namespace

TEST_CASE("HF checkpoint round trip is bit-exact and has HF's layout", "[unit]") {
  Models m;
  const std::string dir = temp_dir("round_trip");
  save_pretrainer_models(m.ctx, m.source, dir);
  REQUIRE(snapshot(m.source.store()) != snapshot(m.target.store()));
  load_pretrainer_models(m.ctx, m.target, dir);
  CHECK(snapshot(m.source.store()) == snapshot(m.target.store()));

  const ParameterStore& store = m.source.store();
  const SafetensorsFile disc = SafetensorsFile::read(dir + "/discriminator/model.safetensors");
  const SafetensorsFile gen = SafetensorsFile::read(dir + "/generator/model.safetensors");
  CHECK(disc.metadata().at("format") == "pt");
  CHECK(gen.metadata().at("format") == "pt");
  // The discriminator file holds exactly the "discriminator/" parameters under their HF names;
  // the generator file its own parameters and the shared tables, without the tied lm head.
  std::set<std::string> disc_names, gen_names;
  for (const SafetensorsEntry& e : disc.entries()) {
    CHECK(e.dtype == "F32");
    disc_names.insert("discriminator/" + e.name);
    CHECK(e.shape == store.info("discriminator/" + e.name).shape);
  }
  for (const SafetensorsEntry& e : gen.entries()) {
    CHECK(e.dtype == "F32");
    gen_names.insert(e.name);
  }
  size_t generator_own = 0, shared = 0;
  for (const ParamInfo& p : store.params()) {
    if (p.name.rfind("discriminator/", 0) == 0) {
      CHECK(disc_names.count(p.name) == 1);
      if (p.name.rfind("discriminator/electra.embeddings.", 0) == 0) {
        ++shared;
        CHECK(gen_names.count(p.name.substr(14)) == 1);
      }
    } else {
      ++generator_own;
      CHECK(gen_names.count(p.name.substr(10)) == 1);
    }
  }
  CHECK(disc_names.size() + generator_own == store.params().size());
  CHECK(shared == 5);
  CHECK(gen_names.size() == generator_own + shared);
  CHECK(gen_names.count("generator_lm_head.weight") == 0);
  CHECK(gen_names.count("generator_lm_head.bias") == 1);
  CHECK(disc_names.count("discriminator/electra.embeddings_project.weight") == 1);
  CHECK(gen_names.count("electra.embeddings_project.weight") == 0);  // generator H = E

  // config.json: HF's keys, and it reads back as the model's sizes.
  nlohmann::json j;
  std::ifstream(dir + "/generator/config.json") >> j;
  CHECK(j.at("architectures") == nlohmann::json::array({"ElectraForMaskedLM"}));
  CHECK(j.at("model_type") == "electra");
  CHECK(j.at("hidden_act") == "gelu");
  CHECK(j.at("hidden_size") == 16);
  CHECK(j.at("num_attention_heads") == 1);
  CHECK(j.at("intermediate_size") == 64);
  CHECK(j.at("embedding_size") == 16);
  CHECK(j.at("layer_norm_eps") == 1e-12);
  CHECK(j.at("pad_token_id") == 0);
  CHECK(j.at("tie_word_embeddings") == true);
  const EncoderConfig d = read_hf_config(dir + "/discriminator/config.json");
  const EncoderConfig& want = m.source.config().discriminator;
  CHECK(d.vocab_size == want.vocab_size);
  CHECK(d.embedding_size == want.embedding_size);
  CHECK(d.hidden == want.hidden);
  CHECK(d.layers == want.layers);
  CHECK(d.heads == want.heads);
  CHECK(d.ffn == want.ffn);
  CHECK(d.max_positions == want.max_positions);
  CHECK(d.type_vocab_size == want.type_vocab_size);
  CHECK(d.hidden_dropout == want.hidden_dropout);
  CHECK(d.layer_norm_eps == want.layer_norm_eps);
}

TEST_CASE("HF checkpoint of a float64 store is F32 and loads into a float32 model", "[unit]") {
  Context ctx64 = Context::cpu(0, Precision::F64);
  ElectraPretrainer wide(ctx64, test::tiny_electra_config(), test::tiny_options());
  wide.init_weights(ctx64, 1);
  const std::string dir = temp_dir("f64");
  save_pretrainer_models(ctx64, wide, dir);
  const SafetensorsFile file = SafetensorsFile::read(dir + "/discriminator/model.safetensors");
  for (const SafetensorsEntry& e : file.entries()) CHECK(e.dtype == "F32");
  Context ctx = Context::cpu(0, Precision::F32);
  ElectraPretrainer narrow(ctx, test::tiny_electra_config(), test::tiny_options());
  load_pretrainer_models(ctx, narrow, dir);
  const auto a = snapshot(wide.store()), b = snapshot(narrow.store());
  REQUIRE(a.size() == b.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t k = 0; k < a[i].size(); ++k) {
      mismatches += static_cast<double>(static_cast<float>(a[i][k])) != b[i][k];
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("HF model directories load one at a time with load_hf_model", "[unit]") {
  Models m;
  const std::string dir = temp_dir("single");
  const ParameterStore& src = m.source.store();
  const ParameterStore& dst = m.target.store();
  const EncoderConfig disc_config = m.source.config().discriminator;
  const auto source = snapshot(src), before = snapshot(dst);
  save_hf_model(m.ctx, src, discriminator_layout(src, disc_config), dir);
  load_hf_model(m.ctx, dst, discriminator_layout(dst, disc_config), dir);
  const auto after = snapshot(dst);
  for (size_t i = 0; i < src.params().size(); ++i) {
    const std::string& name = src.params()[i].name;
    INFO(name);
    CHECK(after[i] == (name.rfind("discriminator/", 0) == 0 ? source[i] : before[i]));
  }
  // A discriminator directory is not a generator: the sizes in config.json differ.
  const std::string message = user_error([&] {
    load_hf_model(m.ctx, dst, generator_layout(dst, m.source.config().generator()), dir);
  });
  CHECK_THAT(message, Contains(dir + "/config.json") && Contains("hidden_size is 32"));
}

TEST_CASE("HF checkpoint with a wrong shape is refused, naming the file and tensor", "[unit]") {
  Models m;
  const std::string dir = temp_dir("wrong_shape");
  save_pretrainer_models(m.ctx, m.source, dir);
  std::vector<std::vector<uint8_t>> storage;
  edit_weights(
      dir + "/discriminator",
      [](std::vector<NamedTensor>& tensors) {
        for (NamedTensor& t : tensors) {
          if (t.name == "electra.encoder.layer.1.attention.self.key.weight") {
            t.tensor.shape[0] = 16;  // [16, 32] instead of [32, 32]
          }
        }
      },
      storage);
  expect_refused(m, dir,
                 {dir + "/discriminator/model.safetensors",
                  "'electra.encoder.layer.1.attention.self.key.weight'", "[16, 32]", "[32, 32]"});
}

TEST_CASE("HF checkpoint with a missing tensor is refused before anything is loaded", "[unit]") {
  Models m;
  const std::string dir = temp_dir("missing");
  save_pretrainer_models(m.ctx, m.source, dir);
  std::vector<std::vector<uint8_t>> storage;
  // Only the generator directory is broken: the discriminator, valid, must not be loaded either.
  edit_weights(
      dir + "/generator",
      [](std::vector<NamedTensor>& tensors) {
        tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                     [](const NamedTensor& t) {
                                       return t.name == "generator_predictions.LayerNorm.bias";
                                     }),
                      tensors.end());
      },
      storage);
  expect_refused(
      m, dir,
      {dir + "/generator/model.safetensors", "'generator_predictions.LayerNorm.bias'", "missing"});
}

TEST_CASE("HF checkpoint with an unexpected tensor is refused, HF known extras are ignored",
          "[unit]") {
  Models m;
  const std::string dir = temp_dir("extra");
  save_pretrainer_models(m.ctx, m.source, dir);
  std::vector<std::vector<uint8_t>> storage;
  std::vector<float> extra(32, 0.5f), lm_head(97 * 16, 0.25f);
  std::vector<int32_t> position_ids(32, 1);
  // What HF checkpoints may carry beyond our parameters: the position_ids buffer (older
  // transformers) and the tied lm head weight.
  edit_weights(
      dir + "/generator",
      [&](std::vector<NamedTensor>& tensors) {
        tensors.push_back({"electra.embeddings.position_ids", test::view(position_ids, {1, 32})});
        tensors.push_back({"generator_lm_head.weight", test::view(lm_head, {97, 16})});
      },
      storage);
  load_pretrainer_models(m.ctx, m.target, dir);
  CHECK(snapshot(m.source.store()) == snapshot(m.target.store()));

  m.target.init_weights(m.ctx, 2);
  edit_weights(
      dir + "/discriminator",
      [&](std::vector<NamedTensor>& tensors) {
        tensors.push_back({"electra.encoder.layer.2.output.dense.bias", test::view(extra)});
      },
      storage);
  expect_refused(m, dir,
                 {dir + "/discriminator/model.safetensors",
                  "'electra.encoder.layer.2.output.dense.bias'", "unexpected"});
}

TEST_CASE("HF checkpoint with an integer tensor is refused", "[unit]") {
  Models m;
  const std::string dir = temp_dir("dtype");
  save_pretrainer_models(m.ctx, m.source, dir);
  std::vector<std::vector<uint8_t>> storage;
  std::vector<int32_t> ints(32, 1);
  edit_weights(
      dir + "/discriminator",
      [&](std::vector<NamedTensor>& tensors) {
        for (NamedTensor& t : tensors) {
          if (t.name == "discriminator_predictions.dense.bias") t.tensor = test::view(ints);
        }
      },
      storage);
  expect_refused(
      m, dir,
      {dir + "/discriminator/model.safetensors", "'discriminator_predictions.dense.bias'", "I32"});
}

TEST_CASE("HF checkpoint whose config.json does not match the model is refused", "[unit]") {
  Models m;
  const std::string dir = temp_dir("config");
  save_pretrainer_models(m.ctx, m.source, dir);
  const std::string config = dir + "/discriminator/config.json";
  SECTION("a size") {
    edit_config(dir + "/discriminator", [](nlohmann::json& j) { j["num_hidden_layers"] = 3; });
    expect_refused(m, dir, {config, "num_hidden_layers", "3 in the checkpoint", "2 in the model"});
  }
  SECTION("the activation") {
    edit_config(dir + "/discriminator", [](nlohmann::json& j) { j["hidden_act"] = "gelu_new"; });
    expect_refused(m, dir, {config, "hidden_act", "gelu_new"});
  }
  SECTION("the model type") {
    edit_config(dir + "/discriminator", [](nlohmann::json& j) { j["model_type"] = "bert"; });
    expect_refused(m, dir, {config, "model_type", "bert"});
  }
  SECTION("a size that is not an integer") {
    edit_config(dir + "/discriminator", [](nlohmann::json& j) { j["hidden_size"] = "32"; });
    expect_refused(m, dir, {config, "hidden_size", "positive integer"});
  }
  SECTION("no config.json") {
    fs::remove(config);
    expect_refused(m, dir, {config, "cannot open"});
  }
}

TEST_CASE("generator and discriminator checkpoints must agree on the shared tables", "[unit]") {
  Models m;
  const std::string dir = temp_dir("shared");
  save_pretrainer_models(m.ctx, m.source, dir);
  std::vector<std::vector<uint8_t>> storage;
  edit_weights(
      dir + "/generator",
      [&](std::vector<NamedTensor>& tensors) {
        for (NamedTensor& t : tensors) {
          if (t.name == "electra.embeddings.token_type_embeddings.weight")
            t.tensor.ptr<float>()[3] += 1;
        }
      },
      storage);
  expect_refused(
      m, dir,
      {dir + "/generator/model.safetensors", "'electra.embeddings.token_type_embeddings.weight'",
       dir + "/discriminator/model.safetensors"});
}

TEST_CASE("sharing: all writes the tied encoder into both directories, loads them equal",
          "[unit]") {
  PretrainOptions o = test::tiny_options();
  o.sharing = Sharing::kAll;
  Models m(test::tiny_tied_config(), o);
  const std::string dir = temp_dir("all");
  save_pretrainer_models(m.ctx, m.source, dir);
  load_pretrainer_models(m.ctx, m.target, dir);
  CHECK(snapshot(m.source.store()) == snapshot(m.target.store()));
  // generator/ is a whole ElectraForMaskedLM: the discriminator's encoder under its own names.
  const SafetensorsFile disc = SafetensorsFile::read(dir + "/discriminator/model.safetensors");
  const SafetensorsFile gen = SafetensorsFile::read(dir + "/generator/model.safetensors");
  int tied = 0;
  for (const SafetensorsEntry& e : disc.entries()) {
    if (e.name.rfind("electra.", 0) != 0) continue;
    ++tied;
    const SafetensorsEntry* copy = gen.find(e.name);
    REQUIRE(copy != nullptr);
    CHECK(file_bytes(disc, e) == file_bytes(gen, *copy));
  }
  CHECK(tied == 5 + 2 + 2 * 16);  // tables and LayerNorm, projection, 2 layers
  CHECK(gen.find("generator_predictions.dense.weight") != nullptr);
  // A tied layer that differs between the directories is refused, as a shared table.
  std::vector<std::vector<uint8_t>> storage;
  const std::string layer = "electra.encoder.layer.1.output.dense.weight";
  edit_weights(
      dir + "/generator",
      [&](std::vector<NamedTensor>& tensors) {
        for (NamedTensor& t : tensors) {
          if (t.name == layer) t.tensor.ptr<float>()[0] += 1;
        }
      },
      storage);
  expect_refused(m, dir, {dir + "/generator/model.safetensors", "'" + layer + "'"});
}

TEST_CASE("sharing: gdes saves E_G + E_delta as the discriminator's tables", "[unit]") {
  PretrainOptions o = test::tiny_options();
  o.sharing = Sharing::kGdes;
  Models m(test::tiny_electra_config(), o);
  const ParameterStore& store = m.source.store();
  const std::string residual = "discriminator/electra.embeddings.word_embeddings.delta";
  const std::string base = "generator/electra.embeddings.word_embeddings.weight";
  float* delta = store.param(residual).ptr<float>();
  const std::vector<float> noise = test::random_vector<float>(store.info(residual).numel, 4);
  std::copy(noise.begin(), noise.end(), delta);
  const std::string dir = temp_dir("gdes");
  save_pretrainer_models(m.ctx, m.source, dir);
  const SafetensorsFile disc = SafetensorsFile::read(dir + "/discriminator/model.safetensors");
  for (const SafetensorsEntry& e : disc.entries()) {
    INFO(e.name);
    CHECK(e.name.find(".delta") == std::string::npos);  // a plain ElectraForPreTraining
  }
  std::vector<float> saved(static_cast<size_t>(store.info(residual).numel));
  disc.read_f32(*disc.find("electra.embeddings.word_embeddings.weight"), saved.data());
  const float* g = store.param(base).ptr<float>();
  for (size_t i = 0; i < saved.size(); ++i) REQUIRE(saved[i] == g[i] + delta[i]);
  // Loading takes E_delta = file - E_G: the same up to one rounding (a resume restores the exact
  // values from trainer_state.safetensors).
  load_pretrainer_models(m.ctx, m.target, dir);
  const ParameterStore& t = m.target.store();
  const float* loaded = t.param(residual).ptr<float>();
  const float* loaded_base = t.param(base).ptr<float>();
  for (size_t i = 0; i < saved.size(); ++i) {
    REQUIRE(loaded_base[i] == g[i]);
    REQUIRE(std::abs(loaded[i] - delta[i]) <= 1e-7f);
  }
  for (const std::string& name :
       {std::string("discriminator/electra.embeddings.LayerNorm.weight"),
        std::string("discriminator/electra.encoder.layer.0.output.dense.weight")}) {
    CHECK(std::equal(store.param(name).ptr<float>(),
                     store.param(name).ptr<float>() + store.info(name).numel,
                     t.param(name).ptr<float>()));
  }
}

TEST_CASE("read_hf_config reads an HF ELECTRA config.json", "[unit]") {
  const std::string dir = temp_dir("read_config");
  // google/electra-small-discriminator's config.json.
  std::ofstream(dir + "/config.json") << R"({
    "architectures": ["ElectraForPreTraining"], "attention_probs_dropout_prob": 0.1,
    "embedding_size": 128, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 256,
    "initializer_range": 0.02, "intermediate_size": 1024, "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512, "model_type": "electra", "num_attention_heads": 4,
    "num_hidden_layers": 12, "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 30522})";
  const EncoderConfig c = read_hf_config(dir + "/config.json");
  const EncoderConfig small = electra_preset("small").discriminator;
  CHECK(c.vocab_size == small.vocab_size);
  CHECK(c.embedding_size == small.embedding_size);
  CHECK(c.hidden == small.hidden);
  CHECK(c.layers == small.layers);
  CHECK(c.heads == small.heads);
  CHECK(c.ffn == small.ffn);
  CHECK(c.max_positions == small.max_positions);
  CHECK(c.type_vocab_size == small.type_vocab_size);
  CHECK(c.hidden_dropout == 0.1f);
  CHECK(c.attention_dropout == 0.1f);
  CHECK(c.layer_norm_eps == 1e-12f);

  std::ofstream(dir + "/bad.json") << R"({"model_type": "electra", "hidden_size": 30,
                                          "num_attention_heads": 4})";
  CHECK_THAT(user_error([&] { read_hf_config(dir + "/bad.json"); }),
             Contains(dir + "/bad.json") && Contains("not divisible"));
}
