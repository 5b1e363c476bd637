// HF transformers checkpoint I/O (contract in models/hf_checkpoint.h).
#include "models/hf_checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/device.h"
#include "engine/input_file.h"
#include "engine/safetensors.h"
#include "models/embeddings.h"
#include "models/generator.h"
#include "models/pretrainer.h"

namespace electra {

namespace {

namespace fs = std::filesystem;

const char* const kWeightsFile = "model.safetensors";
const char* const kConfigFile = "config.json";
const std::string kDiscriminatorPrefix = ElectraDiscriminator::kPrefix;
const std::string kGeneratorPrefix = ElectraGenerator::kPrefix;
// The shared tables' HF names (and not electra.embeddings_project.*, which each model owns).
const std::string kSharedEmbeddings = "electra.embeddings.";

// Tensors an HF checkpoint may hold that the engine has no parameter for, on purpose.
bool ignored_tensor(const std::string& name) {
  return name == "electra.embeddings.position_ids" || name == "generator_lm_head.weight";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += str_cat(i ? ", " : "", shape[i]);
  return s + "]";
}

// A float as the shortest decimal that reads back as it (0.1f -> 0.1, not 0.10000000149...), so
// config.json shows the values a user wrote.
double decimal(float value) {
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  *result.ptr = '\0';
  return std::strtod(buf, nullptr);
}

// config.json as ElectraConfig.save_pretrained writes it (transformers 5), plus the keys 4.x
// reads (torch_dtype, position_embedding_type), so both major versions load it without guessing.
nlohmann::ordered_json hf_config_json(const HfModelLayout& layout) {
  const EncoderConfig& c = layout.config;
  nlohmann::ordered_json j;
  j["architectures"] = {layout.architecture};
  j["model_type"] = "electra";
  j["vocab_size"] = c.vocab_size;
  j["embedding_size"] = c.embedding_size;
  j["hidden_size"] = c.hidden;
  j["num_hidden_layers"] = c.layers;
  j["num_attention_heads"] = c.heads;
  j["intermediate_size"] = c.ffn;
  j["hidden_act"] = "gelu";
  j["hidden_dropout_prob"] = decimal(c.hidden_dropout);
  j["attention_probs_dropout_prob"] = decimal(c.attention_dropout);
  j["max_position_embeddings"] = c.max_positions;
  j["type_vocab_size"] = c.type_vocab_size;
  j["initializer_range"] = 0.02;
  j["layer_norm_eps"] = decimal(c.layer_norm_eps);
  j["pad_token_id"] = 0;
  j["position_embedding_type"] = "absolute";
  j["summary_type"] = "first";
  j["summary_use_proj"] = true;
  j["summary_activation"] = "gelu";
  j["summary_last_dropout"] = 0.1;
  j["classifier_dropout"] = nullptr;
  j["tie_word_embeddings"] = true;
  j["is_decoder"] = false;
  j["add_cross_attention"] = false;
  j["use_cache"] = true;
  j["dtype"] = "float32";
  j["torch_dtype"] = "float32";
  if (layout.num_labels > 0) {
    nlohmann::ordered_json id2label, label2id;
    for (int i = 0; i < layout.num_labels; ++i) {
      id2label[str_cat(i)] = str_cat("LABEL_", i);
      label2id[str_cat("LABEL_", i)] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
  }
  if (!layout.problem_type.empty()) j["problem_type"] = layout.problem_type;
  if (!layout.note.empty()) j["electra_engine_note"] = layout.note;
  return j;
}

nlohmann::json read_json(const std::string& path) {
  require_regular_file(path, "JSON file");
  std::ifstream in(path);
  ELECTRA_USER_CHECK(in, path, ": cannot open");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    ELECTRA_USER_CHECK(j.is_object(), path, ": not a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(str_cat(path, ": not valid JSON (", e.what(), ")"));
  }
}

// A validated model directory: its weights file and the (checkpoint name, store name) pairs to
// copy. Nothing has been written into the store yet.
struct PreparedModel {
  SafetensorsFile file;
  std::vector<std::pair<std::string, std::string>> copies;
  std::vector<HfModelLayout::Sum> sums;
};

// A store parameter on the host in f64 (exact for an f32 store too).
std::vector<double> host_values(Context& ctx, const ParameterStore& store,
                                const std::string& store_name) {
  const ParamInfo& info = store.info(store_name);
  const Tensor src = store.param(store_name).reshape({info.numel});
  std::vector<double> wide(static_cast<size_t>(info.numel));
  if (src.dtype == DType::F64) {
    copy_tensor(ctx.stream(), Tensor::view_of(wide.data(), Device::CPU, {info.numel}), src);
  } else {
    std::vector<float> narrow(wide.size());
    copy_tensor(ctx.stream(), Tensor::view_of(narrow.data(), Device::CPU, {info.numel}), src);
    std::copy(narrow.begin(), narrow.end(), wide.begin());
  }
  return wide;
}

void check_config(const std::string& path, const EncoderConfig& file, const EncoderConfig& model) {
  auto same = [&](const char* key, auto in_file, auto in_model) {
    ELECTRA_USER_CHECK(in_file == in_model, path, ": ", key, " is ", in_file,
                       " in the checkpoint but ", in_model, " in the model");
  };
  same("vocab_size", file.vocab_size, model.vocab_size);
  same("embedding_size", file.embedding_size, model.embedding_size);
  same("hidden_size", file.hidden, model.hidden);
  same("num_hidden_layers", file.layers, model.layers);
  same("num_attention_heads", file.heads, model.heads);
  same("intermediate_size", file.ffn, model.ffn);
  same("max_position_embeddings", file.max_positions, model.max_positions);
  same("type_vocab_size", file.type_vocab_size, model.type_vocab_size);
  // eps travels through decimal text and float: equal up to float rounding.
  ELECTRA_USER_CHECK(std::abs(file.layer_norm_eps - model.layer_norm_eps) <=
                         1e-6f * std::abs(model.layer_norm_eps),
                     path, ": layer_norm_eps is ", file.layer_norm_eps, " in the checkpoint but ",
                     model.layer_norm_eps, " in the model");
}

PreparedModel prepare(const ParameterStore& store, const HfModelLayout& layout,
                      const std::string& dir) {
  ELECTRA_CHECK(store.allocated(), "load_hf_model: the parameter store is not allocated");
  const std::string config_path = (fs::path(dir) / kConfigFile).string();
  ELECTRA_USER_CHECK(fs::is_directory(dir), dir, ": checkpoint directory does not exist");
  check_config(config_path, read_hf_config(config_path), layout.config);

  PreparedModel prepared;
  prepared.file = SafetensorsFile::read((fs::path(dir) / kWeightsFile).string());
  const SafetensorsFile& file = prepared.file;
  std::set<std::string> expected;
  std::vector<float> values;
  std::vector<std::pair<std::string, std::string>> checked = layout.tensors;
  for (const HfModelLayout::Sum& sum : layout.sums) checked.emplace_back(sum.name, sum.residual);
  prepared.sums = layout.sums;
  for (const auto& [name, store_name] : checked) {
    expected.insert(name);
    const std::vector<int64_t>& shape = store.info(store_name).shape;
    const SafetensorsEntry* entry = file.find(name);
    if (entry == nullptr &&
        std::any_of(
            layout.optional_prefixes.begin(), layout.optional_prefixes.end(),
            [&tensor = name](const std::string& prefix) { return starts_with(tensor, prefix); })) {
      continue;
    }
    ELECTRA_USER_CHECK(entry != nullptr, file.path(), ": tensor '", name,
                       "' is missing (the model needs ", shape_str(shape), ")");
    ELECTRA_USER_CHECK(entry->shape == shape, file.path(), ": tensor '", name, "' has shape ",
                       shape_str(entry->shape), " but the model needs ", shape_str(shape));
    const std::string& dt = entry->dtype;
    ELECTRA_USER_CHECK(dt == "F32" || dt == "F64" || dt == "F16" || dt == "BF16", file.path(),
                       ": tensor '", name, "' has dtype ", dt, "; a floating type is needed");
    values.resize(static_cast<size_t>(entry->numel()));
    file.read_f32(*entry, values.data());
    require_finite(file.path(), name, values.data(), entry->numel());
    if (!is_gdes_residual(store_name)) prepared.copies.emplace_back(name, store_name);
  }
  for (const SafetensorsEntry& entry : file.entries()) {
    const bool skipped =
        std::any_of(layout.ignored_prefixes.begin(), layout.ignored_prefixes.end(),
                    [&](const std::string& prefix) { return starts_with(entry.name, prefix); });
    ELECTRA_USER_CHECK(expected.count(entry.name) != 0 || ignored_tensor(entry.name) || skipped,
                       file.path(), ": unexpected tensor '", entry.name, "' ",
                       shape_str(entry.shape), ": the ", layout.architecture,
                       " model has no such parameter");
  }
  return prepared;
}

void apply(Context& ctx, const ParameterStore& store, const PreparedModel& prepared) {
  std::vector<float> values;
  for (const auto& [name, store_name] : prepared.copies) {
    const SafetensorsEntry& entry = *prepared.file.find(name);
    values.resize(static_cast<size_t>(entry.numel()));
    prepared.file.read_f32(entry, values.data());
    load_host_values(ctx, store, store_name, values);
  }
  for (const HfModelLayout::Sum& sum : prepared.sums) {
    const SafetensorsEntry& entry = *prepared.file.find(sum.name);
    values.resize(static_cast<size_t>(entry.numel()));
    prepared.file.read_f32(entry, values.data());
    const std::vector<double> base = host_values(ctx, store, sum.base);
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<float>(static_cast<double>(values[i]) - base[i]);
    }
    load_host_values(ctx, store, sum.residual, values);
  }
}

// The store's "<prefix>..." tensors, plus the discriminator's tensors under `shared` (a prefix of
// their HF names; "" for none) as this model's own.
HfModelLayout layout_of(const ParameterStore& store, const std::string& architecture,
                        const EncoderConfig& config, const std::string& prefix,
                        const std::string& shared) {
  HfModelLayout layout;
  layout.architecture = architecture;
  layout.config = config;
  for (const ParamInfo& p : store.params()) {
    if (starts_with(p.name, prefix)) {
      const std::string name = p.name.substr(prefix.size());
      if (!is_gdes_residual(name)) {
        layout.tensors.emplace_back(name, p.name);
        continue;
      }
      // sharing: gdes: E_D = E_G + E_delta under the table's HF name.
      const std::string table = name.substr(0, name.size() - std::strlen(kGdesResidualSuffix));
      layout.sums.push_back(
          HfModelLayout::Sum{table + ".weight", p.name, kGeneratorPrefix + table + ".weight"});
    } else if (!shared.empty() && starts_with(p.name, kDiscriminatorPrefix + shared)) {
      layout.tensors.emplace_back(p.name.substr(kDiscriminatorPrefix.size()), p.name);
    }
  }
  ELECTRA_CHECK(!layout.tensors.empty(), "no parameter of the store starts with ", prefix);
  return layout;
}

}  // namespace

HfModelLayout discriminator_layout(const ParameterStore& store, const EncoderConfig& config) {
  HfModelLayout layout =
      layout_of(store, "ElectraForPreTraining", config, kDiscriminatorPrefix, "");
  // The MLM objectives (models/objective.h) give the discriminator-sized model an MLM head.
  auto has = [&](const char* prefix) {
    return std::any_of(layout.tensors.begin(), layout.tensors.end(),
                       [&](const auto& t) { return starts_with(t.first, prefix); });
  };
  if (has("generator_predictions.")) {
    if (has("discriminator_predictions.")) {
      layout.note =
          "all-tokens-mlm pre-training: generator_predictions.* and generator_lm_head.bias are "
          "the MLM head, discriminator_predictions.* the copy head (the probability of keeping "
          "the input token); ElectraForPreTraining loads the encoder and the copy head only";
    } else {
      layout.architecture = "ElectraForMaskedLM";
    }
  }
  return layout;
}

bool has_generator(const ParameterStore& store) {
  return std::any_of(store.params().begin(), store.params().end(),
                     [](const ParamInfo& p) { return starts_with(p.name, kGeneratorPrefix); });
}

HfModelLayout generator_layout(const ParameterStore& store, const EncoderConfig& generator_config) {
  auto has = [&](const std::string& prefix) {
    return std::any_of(store.params().begin(), store.params().end(),
                       [&](const ParamInfo& p) { return starts_with(p.name, prefix); });
  };
  // sharing: none and gdes: the generator's own tables; all: no encoder of its own.
  const std::string shared = has(kGeneratorPrefix + kSharedEmbeddings) ? ""
                             : has(kGeneratorPrefix + "electra.")      ? kSharedEmbeddings
                                                                       : "electra.";
  HfModelLayout layout =
      layout_of(store, "ElectraForMaskedLM", generator_config, kGeneratorPrefix, shared);
  // generator_training: adversarial saves its REINFORCE baseline beside the generator
  // (adversarial_baseline.*, docs/OBJECTIVES.md); a model without one (an mle run, the evaluation
  // commands) reads such a directory without it.
  const std::string baseline = ElectraGenerator::kAdversarialBaseline;
  if (std::none_of(layout.tensors.begin(), layout.tensors.end(),
                   [&](const auto& t) { return starts_with(t.first, baseline); })) {
    layout.ignored_prefixes.push_back(baseline);
  } else {
    layout.note =
        "adversarial_baseline.* is the REINFORCE baseline of generator_training: adversarial "
        "(b = -log sigmoid(w . h + c) on the encoder's output at a masked position); "
        "ElectraForMaskedLM does not use it";
  }
  return layout;
}

EncoderConfig read_hf_config(const std::string& config_json_path) {
  const nlohmann::json j = read_json(config_json_path);
  const std::string& path = config_json_path;
  auto text = [&](const char* key) -> std::string {
    ELECTRA_USER_CHECK(j.at(key).is_string(), path, ": ", key, " must be a string");
    return j.at(key).get<std::string>();
  };
  ELECTRA_USER_CHECK(j.contains("model_type"), path,
                     ": model_type is missing (expected \"electra\")");
  const std::string model_type = text("model_type");
  ELECTRA_USER_CHECK(model_type == "electra", path, ": model_type is \"", model_type,
                     "\", expected \"electra\"");
  // Absent keys take ElectraConfig's defaults, which are EncoderConfig's (ELECTRA-Small).
  if (j.contains("hidden_act")) {
    const std::string act = text("hidden_act");
    ELECTRA_USER_CHECK(act == "gelu", path, ": hidden_act is \"", act,
                       "\"; the engine implements \"gelu\" (exact erf) only");
  }
  if (j.contains("position_embedding_type")) {
    const std::string type = text("position_embedding_type");
    ELECTRA_USER_CHECK(type == "absolute", path, ": position_embedding_type is \"", type,
                       "\"; the engine implements \"absolute\" only");
  }
  EncoderConfig c;
  auto size = [&](const char* key, int& field) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j.at(key);
    ELECTRA_USER_CHECK(
        v.is_number_integer() && v.get<int64_t>() > 0 && v.get<int64_t>() <= int64_t{1} << 30, path,
        ": ", key, " must be a positive integer (got ", v.dump(), ")");
    field = v.get<int>();
  };
  auto real = [&](const char* key, float& field) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j.at(key);
    ELECTRA_USER_CHECK(v.is_number(), path, ": ", key, " must be a number (got ", v.dump(), ")");
    field = v.get<float>();
  };
  size("vocab_size", c.vocab_size);
  size("embedding_size", c.embedding_size);
  size("hidden_size", c.hidden);
  size("num_hidden_layers", c.layers);
  size("num_attention_heads", c.heads);
  size("intermediate_size", c.ffn);
  size("max_position_embeddings", c.max_positions);
  size("type_vocab_size", c.type_vocab_size);
  real("hidden_dropout_prob", c.hidden_dropout);
  real("attention_probs_dropout_prob", c.attention_dropout);
  real("layer_norm_eps", c.layer_norm_eps);
  c.validate(path);
  return c;
}

std::string read_hf_architecture(const std::string& config_json_path) {
  const nlohmann::json j = read_json(config_json_path);
  const auto it = j.find("architectures");
  if (it == j.end() || !it->is_array() || it->empty() || !it->front().is_string()) return "";
  return it->front().get<std::string>();
}

std::vector<HostTensor> hf_host_tensors(Context& ctx, const ParameterStore& store,
                                        const HfModelLayout& layout) {
  ELECTRA_CHECK(store.allocated(), "save_hf_model: the parameter store is not allocated");
  std::vector<HostTensor> out;
  auto host = [&](const std::string& name, const std::string& store_name,
                  const std::vector<double>& values) {
    HostTensor t{name, store.info(store_name).shape, std::vector<float>(values.size())};
    std::transform(values.begin(), values.end(), t.values.begin(),
                   [](double x) { return static_cast<float>(x); });
    out.push_back(std::move(t));
  };
  for (const auto& [name, store_name] : layout.tensors) {
    host(name, store_name, host_values(ctx, store, store_name));
  }
  // gdes: E_G + E_delta rounded once in the store's dtype, as elementwise_add computed it.
  const bool narrow = store.flat_params().dtype == DType::F32;
  for (const HfModelLayout::Sum& sum : layout.sums) {
    std::vector<double> values = host_values(ctx, store, sum.residual);
    const std::vector<double> base = host_values(ctx, store, sum.base);
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] =
          narrow ? static_cast<double>(static_cast<float>(base[i]) + static_cast<float>(values[i]))
                 : base[i] + values[i];
    }
    host(sum.name, sum.residual, values);
  }
  return out;
}

void save_hf_tensors(const std::vector<HostTensor>& host, const HfModelLayout& layout,
                     const std::string& dir) {
  // Nothing is written when a value is not finite (a diverged model never replaces a good one).
  for (const HostTensor& t : host) {
    require_finite((fs::path(dir) / kWeightsFile).string(), t.name, t.values.data(),
                   static_cast<int64_t>(t.values.size()));
  }
  std::error_code error;
  fs::create_directories(dir, error);
  ELECTRA_USER_CHECK(!error && fs::is_directory(dir), dir, ": cannot create the directory (",
                     error.message(), ")");
  std::vector<NamedTensor> tensors;
  for (const HostTensor& t : host) {
    Tensor view;
    view.data = const_cast<float*>(t.values.data());  // only read by write_safetensors
    view.dtype = DType::F32;
    view.device = Device::CPU;
    view.rank = static_cast<int>(t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d) view.shape[d] = t.shape[d];
    tensors.push_back(NamedTensor{t.name, view});
  }
  write_safetensors((fs::path(dir) / kWeightsFile).string(), tensors, {{"format", "pt"}});
  write_file_atomic((fs::path(dir) / kConfigFile).string(), hf_config_json(layout).dump(2) + "\n");
}

void save_hf_model(Context& ctx, const ParameterStore& store, const HfModelLayout& layout,
                   const std::string& dir) {
  save_hf_tensors(hf_host_tensors(ctx, store, layout), layout, dir);
}

void load_host_values(Context& ctx, const ParameterStore& store, const std::string& store_name,
                      const std::vector<float>& values) {
  const Tensor dst = store.param(store_name);
  const int64_t n = dst.numel();
  ELECTRA_CHECK(static_cast<int64_t>(values.size()) == n, store_name, ": ", values.size(),
                " values for ", n, " elements");
  if (dst.dtype == DType::F64) {
    std::vector<double> wide(values.begin(), values.end());
    copy_tensor(ctx.stream(), dst.reshape({n}), Tensor::view_of(wide.data(), Device::CPU, {n}));
  } else {
    copy_tensor(ctx.stream(), dst.reshape({n}),
                Tensor::view_of(const_cast<float*>(values.data()), Device::CPU, {n}));
  }
}

void load_hf_model(Context& ctx, const ParameterStore& store, const HfModelLayout& layout,
                   const std::string& dir) {
  const PreparedModel prepared = prepare(store, layout, dir);
  apply(ctx, store, prepared);
}

void save_pretrainer_models(Context& ctx, const ElectraPretrainer& pretrainer,
                            const std::string& dir) {
  const ParameterStore& store = pretrainer.store();
  const ElectraConfig& config = pretrainer.config();
  save_hf_model(ctx, store, discriminator_layout(store, config.discriminator),
                (fs::path(dir) / "discriminator").string());
  if (!has_generator(store)) return;  // the mlm objective
  save_hf_model(ctx, store, generator_layout(store, config.generator()),
                (fs::path(dir) / "generator").string());
}

namespace {

// Both models of a pre-training pair, validated; nothing written yet.
struct PreparedPair {
  PreparedModel discriminator, generator;
};

// baseline_optional: the generator directory may lack the adversarial baseline (--init).
PreparedPair prepare_pair(const ElectraPretrainer& pretrainer, const std::string& discriminator_dir,
                          const std::string& generator_dir, bool baseline_optional = false) {
  const ParameterStore& store = pretrainer.store();
  const ElectraConfig& config = pretrainer.config();
  HfModelLayout generator = generator_layout(store, config.generator());
  if (baseline_optional) generator.optional_prefixes = {ElectraGenerator::kAdversarialBaseline};
  return PreparedPair{
      prepare(store, discriminator_layout(store, config.discriminator), discriminator_dir),
      prepare(store, generator, generator_dir)};
}

// The shared tables whose generator copy differs from the discriminator's.
std::vector<SharedTableDifference> shared_differences(const PreparedPair& pair) {
  std::vector<SharedTableDifference> out;
  std::vector<float> a, b;
  for (const auto& [name, store_name] : pair.generator.copies) {
    // Only the tensors the store shares (not the generator's own: sharing: none, gdes).
    if (!starts_with(store_name, kDiscriminatorPrefix)) continue;
    const SafetensorsEntry& ge = *pair.generator.file.find(name);
    const SafetensorsEntry& de = *pair.discriminator.file.find(name);
    a.resize(static_cast<size_t>(ge.numel()));
    b.resize(static_cast<size_t>(de.numel()));
    pair.generator.file.read_f32(ge, a.data());
    pair.discriminator.file.read_f32(de, b.data());
    if (a == b) continue;
    double largest = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      largest = std::max(largest, std::abs(static_cast<double>(a[i]) - b[i]));
    }
    out.push_back(SharedTableDifference{name, largest});
  }
  return out;
}

// The generator first, so the discriminator's copy of the shared tables is the one kept.
void apply_pair(Context& ctx, ElectraPretrainer& pretrainer, const PreparedPair& pair) {
  apply(ctx, pretrainer.store(), pair.generator);
  apply(ctx, pretrainer.store(), pair.discriminator);
  pretrainer.weights().refresh_compute(ctx);
}

}  // namespace

void load_pretrainer_models(Context& ctx, ElectraPretrainer& pretrainer, const std::string& dir) {
  const ParameterStore& store = pretrainer.store();
  if (!has_generator(store)) {  // the mlm objective: one model
    const std::string path = (fs::path(dir) / "discriminator").string();
    apply(ctx, store,
          prepare(store, discriminator_layout(store, pretrainer.config().discriminator), path));
    pretrainer.weights().refresh_compute(ctx);
    return;
  }
  const PreparedPair pair = prepare_pair(pretrainer, (fs::path(dir) / "discriminator").string(),
                                         (fs::path(dir) / "generator").string());
  // Both directories carry the shared tables; a pre-training checkpoint has one value for them.
  const std::vector<SharedTableDifference> differences = shared_differences(pair);
  ELECTRA_USER_CHECK(differences.empty(), pair.generator.file.path(), ": shared tensor '",
                     differences.empty() ? "" : differences.front().name,
                     "' differs from its copy in ", pair.discriminator.file.path(),
                     " (the generator and the discriminator share the embedding tables)");
  apply_pair(ctx, pretrainer, pair);
}

std::vector<SharedTableDifference> load_pretrainer_pair(Context& ctx, ElectraPretrainer& pretrainer,
                                                        const std::string& discriminator_dir,
                                                        const std::string& generator_dir) {
  const PreparedPair pair = prepare_pair(pretrainer, discriminator_dir, generator_dir, true);
  std::vector<SharedTableDifference> differences = shared_differences(pair);
  apply_pair(ctx, pretrainer, pair);
  return differences;
}

}  // namespace electra
