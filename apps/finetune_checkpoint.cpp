// Fine-tuned checkpoints (contract in apps/finetune_checkpoint.h).
#include "apps/finetune_checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/safetensors.h"
#include "models/hf_checkpoint.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

// Head tensors a checkpoint may carry that a fresh head does not load.
// generator_predictions. and generator_lm_head. are the MLM head of the MLM objectives.
const std::vector<std::string> kHeadPrefixes = {"discriminator_predictions.",
                                                "generator_predictions.",
                                                "generator_lm_head.",
                                                "classifier.",
                                                "qa_outputs.",
                                                "answerable_classifier."};
const std::string kDense = "classifier.dense.";
const std::string kOutProj = "classifier.out_proj.";
// c_i + k_i >= kLinearMargin keeps GELU exactly linear (see the header).
constexpr double kLinearMargin = 10.0;

bool is_head(const std::string& hf_name) {
  return std::any_of(kHeadPrefixes.begin(), kHeadPrefixes.end(),
                     [&](const std::string& p) { return hf_name.rfind(p, 0) == 0; });
}

bool official_sequence_head(const TaskHeadConfig& head) {
  return head.kind != TaskKind::kSpan && !head.hf_two_layer;
}

HfModelLayout finetuner_layout(const ElectraFinetuner& model, bool with_head) {
  const std::string prefix = ElectraFinetuner::kPrefix;
  HfModelLayout layout;
  const TaskHeadConfig& head = model.head_config();
  layout.architecture = head.kind == TaskKind::kSpan ? "ElectraForQuestionAnswering"
                                                     : "ElectraForSequenceClassification";
  if (head.answerability) {
    layout.architecture = "ElectraForQuestionAnsweringWithAnswerableClassifier";
    layout.note =
        "SQuAD 2.0 checkpoint of electra-engine: answerable_classifier.* (a [CLS] logit that "
        "decides 'no answer') has no HF counterpart; HF's ElectraForQuestionAnswering would load "
        "the start/end layer and drop it, and predict 'no answer' by another rule";
  }
  layout.config = model.encoder_config();
  if (head.kind == TaskKind::kClassification) layout.num_labels = head.num_labels;
  if (head.kind == TaskKind::kRegression) {
    layout.num_labels = 1;
    layout.problem_type = "regression";
  }
  for (const ParamInfo& p : model.store().params()) {
    const std::string name = p.name.substr(prefix.size());
    if (with_head || !is_head(name)) layout.tensors.emplace_back(name, p.name);
  }
  if (!with_head) layout.ignored_prefixes = kHeadPrefixes;
  return layout;
}

HostTensor& find(std::vector<HostTensor>& tensors, const std::string& name) {
  const auto it = std::find_if(tensors.begin(), tensors.end(),
                               [&](const HostTensor& t) { return t.name == name; });
  ELECTRA_CHECK(it != tensors.end(), "no tensor ", name);
  return *it;
}

// k (see the header) from the encoder's last LayerNorm.
std::vector<float> linear_offsets(const std::vector<float>& gamma, const std::vector<float>& beta) {
  const double bound = std::sqrt(static_cast<double>(gamma.size()) - 1.0);
  std::vector<float> k(gamma.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<float>(std::abs(gamma[i]) * bound + std::abs(beta[i]) + kLinearMargin);
  }
  return k;
}

std::string last_layer_norm(const EncoderConfig& c) {
  return str_cat("electra.encoder.layer.", c.layers - 1, ".output.LayerNorm.");
}

// out_proj.bias + s W k for s = -1 (saving) or +1 (loading), in double.
std::vector<float> shifted_bias(const std::vector<float>& weight, const std::vector<float>& bias,
                                const std::vector<float>& k, double s) {
  const size_t h = k.size();
  std::vector<float> out(bias.size());
  for (size_t r = 0; r < bias.size(); ++r) {
    double sum = bias[r];
    for (size_t i = 0; i < h; ++i) sum += s * static_cast<double>(weight[r * h + i]) * k[i];
    out[r] = static_cast<float>(sum);
  }
  return out;
}

// The official head's tensors replaced by HF's two-layer form with the same outputs.
void to_two_layer_form(std::vector<HostTensor>& tensors, const EncoderConfig& config) {
  const std::string ln = last_layer_norm(config);
  const std::vector<float> k =
      linear_offsets(find(tensors, ln + "weight").values, find(tensors, ln + "bias").values);
  const int64_t h = config.hidden;
  HostTensor dense_w{kDense + "weight", {h, h}, std::vector<float>(static_cast<size_t>(h * h))};
  for (int64_t i = 0; i < h; ++i) dense_w.values[static_cast<size_t>(i * h + i)] = 1.0f;
  HostTensor dense_b{kDense + "bias", {h}, k};
  HostTensor& out_b = find(tensors, kOutProj + "bias");
  const HostTensor& out_w = find(tensors, kOutProj + "weight");
  out_b.values = shifted_bias(out_w.values, out_b.values, k, -1.0);
  const auto at = &out_w - tensors.data();  // HF's order: dense before out_proj
  tensors.insert(tensors.begin() + at, {std::move(dense_w), std::move(dense_b)});
}

std::vector<float> read_tensor(const SafetensorsFile& file, const std::string& name) {
  const SafetensorsEntry* e = file.find(name);
  ELECTRA_USER_CHECK(e != nullptr, file.path(), ": tensor '", name, "' is missing");
  std::vector<float> values(static_cast<size_t>(e->numel()));
  file.read_f32(*e, values.data());
  return values;
}

// Folds the two-layer form written by to_two_layer_form back into the official head (whose
// out_proj.weight load_hf_model has loaded already, and whose out_proj.bias it has set to the
// checkpoint's shifted bias).
void fold_two_layer_form(Context& ctx, const ElectraFinetuner& model, const std::string& dir) {
  const SafetensorsFile file =
      SafetensorsFile::read((fs::path(dir) / "model.safetensors").string());
  const EncoderConfig& c = model.encoder_config();
  const size_t h = static_cast<size_t>(c.hidden);
  const std::vector<float> dense = read_tensor(file, kDense + "weight");
  const std::vector<float> k = read_tensor(file, kDense + "bias");
  const std::string ln = last_layer_norm(c);
  const std::vector<float> needed =
      linear_offsets(read_tensor(file, ln + "weight"), read_tensor(file, ln + "bias"));
  bool identity = dense.size() == h * h && k.size() == h;
  for (size_t i = 0; identity && i < h * h; ++i) identity = dense[i] == (i % (h + 1) == 0 ? 1 : 0);
  for (size_t i = 0; identity && i < h; ++i) identity = k[i] >= needed[i] - kLinearMargin / 2;
  ELECTRA_USER_CHECK(identity, file.path(),
                     ": classifier.dense is not the identity layer that holds the official head "
                     "(finetune.json says head 'official'); a two-layer head needs head "
                     "'hf_two_layer'");
  const std::string prefix = ElectraFinetuner::kPrefix;
  const std::vector<float> bias = shifted_bias(read_tensor(file, kOutProj + "weight"),
                                               read_tensor(file, kOutProj + "bias"), k, 1.0);
  load_host_values(ctx, model.store(), prefix + kOutProj + "bias", bias);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

void save_finetuned(Context& ctx, const ElectraFinetuner& model, const std::string& dir,
                    nlohmann::json meta, const data::ModelTokenizer& tokenizer) {
  const HfModelLayout layout = finetuner_layout(model, true);
  std::vector<HostTensor> tensors = hf_host_tensors(ctx, model.store(), layout);
  if (official_sequence_head(model.head_config())) {
    to_two_layer_form(tensors, model.encoder_config());
  }
  save_hf_tensors(tensors, layout, dir);
  data::write_tokenizer_files(dir, tokenizer.vocab, tokenizer.lowercase,
                              model.encoder_config().max_positions);
  // The hash of vocab.txt as written (its bytes may differ from the source's line endings).
  meta["vocab_hash"] = str_cat(data::Vocab::load((fs::path(dir) / "vocab.txt").string()).hash());
  write_file_atomic((fs::path(dir) / "finetune.json").string(), meta.dump(2) + "\n");
}

void load_finetune_init(Context& ctx, ElectraFinetuner& model, const std::string& model_dir,
                        bool with_head) {
  HfModelLayout layout = finetuner_layout(model, with_head);
  const bool fold = with_head && official_sequence_head(model.head_config()) &&
                    SafetensorsFile::read((fs::path(model_dir) / "model.safetensors").string())
                            .find(kDense + "weight") != nullptr;
  if (fold) layout.ignored_prefixes.push_back(kDense);
  load_hf_model(ctx, model.store(), layout, model_dir);
  if (fold) fold_two_layer_form(ctx, model, model_dir);
  model.weights().refresh_compute(ctx);
}

nlohmann::json read_finetune_meta(const std::string& dir) {
  const fs::path path = fs::path(dir) / "finetune.json";
  if (!fs::exists(path)) return nullptr;
  ELECTRA_USER_CHECK(fs::is_regular_file(path), path.string(), ": not a regular file");
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ELECTRA_USER_CHECK(
      !j.is_discarded() && j.is_object() && j.contains("task") && j.at("task").is_string(),
      path.string(), ": malformed (expected {\"task\": ..., \"head\": ...})");
  if (j.contains("head")) {
    ELECTRA_USER_CHECK(j.at("head").is_string(), path.string(), ": head must be a string");
  }
  return j;
}

data::ModelTokenizer checkpoint_tokenizer(const std::string& vocab_path,
                                          const std::string& model_dir) {
  const fs::path dir(model_dir);
  if (!fs::exists(dir / "vocab.txt") && !fs::exists(dir / "tokenizer.json")) {
    ELECTRA_USER_CHECK(!vocab_path.empty(), model_dir,
                       ": no vocab.txt or tokenizer.json (pass --vocab with the vocab.txt the "
                       "model was trained with)");
    return data::load_vocab_tokenizer(vocab_path);
  }
  data::ModelTokenizer own = data::load_model_tokenizer(model_dir);
  const nlohmann::json meta = read_finetune_meta(model_dir);
  if (!meta.is_null() && meta.contains("vocab_hash")) {
    const std::string recorded = meta.at("vocab_hash").is_string()
                                     ? meta.at("vocab_hash").get<std::string>()
                                     : meta.at("vocab_hash").dump();
    ELECTRA_USER_CHECK(recorded == str_cat(own.vocab.hash()), own.vocab.source(),
                       " is not the vocabulary the model was fine-tuned with: its hash ",
                       own.vocab.hash(), " differs from vocab_hash ", recorded, " in ",
                       (dir / "finetune.json").string());
  }
  if (!vocab_path.empty()) {
    data::check_same_vocabulary(data::load_vocab_tokenizer(vocab_path).vocab, own.vocab);
  }
  return own;
}

void check_checkpoint_task(const std::string& dir, const std::string& task) {
  const nlohmann::json meta = read_finetune_meta(dir);
  if (meta.is_null()) return;
  const std::string trained = meta.at("task").get<std::string>();
  ELECTRA_USER_CHECK(lower(trained) == lower(task), dir, " is a fine-tuned ", trained,
                     " checkpoint (", (fs::path(dir) / "finetune.json").string(),
                     "); it cannot be evaluated as ", task);
}

}  // namespace electra::apps
