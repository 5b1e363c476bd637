#include "apps/finetune_config.h"

#include "apps/run_device.h"
#include "engine/yaml_config.h"

namespace electra::apps {

double FinetuneSettings::resolved_lr(const EncoderConfig& encoder) const {
  if (lr > 0) return lr;
  if (encoder.hidden <= 256) return 3e-4;
  return encoder.hidden <= 768 ? 1e-4 : 5e-5;
}

double FinetuneSettings::resolved_decay(const EncoderConfig& encoder) const {
  if (layerwise_lr_decay > 0) return layerwise_lr_decay;
  return encoder.hidden <= 768 ? 0.8 : 0.9;
}

namespace {

// The keys a `tasks: <task>:` section may set.
const char* const kTaskKeys[] = {"epochs", "lr", "batch_size", "max_seq_len"};

void check(bool ok, const std::string& file, const std::string& key, const char* rule) {
  ELECTRA_USER_CHECK(ok, file, ": ", key, " must be ", rule);
}

// The keys of `finetune:` (and the per-task subset) over `base`.
FinetuneSettings read_settings(ConfigNode node, const FinetuneSettings& base,
                               const std::string& file, const std::string& prefix,
                               bool task_level) {
  FinetuneSettings s = base;
  s.lr = node.get<double>("lr", s.lr);
  check(s.lr >= 0, file, prefix + "lr", ">= 0 (0: by model size)");
  s.batch_size = node.get<int64_t>("batch_size", s.batch_size);
  check(s.batch_size > 0, file, prefix + "batch_size", "positive");
  s.epochs = node.get<int64_t>("epochs", s.epochs);
  check(s.epochs > 0, file, prefix + "epochs", "positive");
  s.max_seq_len = node.get<int64_t>("max_seq_len", s.max_seq_len);
  check(s.max_seq_len >= 8 && s.max_seq_len <= 512, file, prefix + "max_seq_len", "in [8, 512]");
  if (task_level) return s;
  s.layerwise_lr_decay = node.get<double>("layerwise_lr_decay", s.layerwise_lr_decay);
  check(s.layerwise_lr_decay >= 0 && s.layerwise_lr_decay <= 1, file, prefix + "layerwise_lr_decay",
        "in [0, 1] (0: by model size)");
  s.official_off_by_one = node.get<bool>("official_off_by_one", s.official_off_by_one);
  s.weight_decay = node.get<double>("weight_decay", s.weight_decay);
  check(s.weight_decay >= 0, file, prefix + "weight_decay", ">= 0");
  s.adam_eps = node.get<double>("adam_eps", s.adam_eps);
  check(s.adam_eps > 0, file, prefix + "adam_eps", "positive");
  s.warmup_fraction = node.get<double>("warmup_fraction", s.warmup_fraction);
  check(s.warmup_fraction >= 0 && s.warmup_fraction < 1, file, prefix + "warmup_fraction",
        "in [0, 1)");
  s.max_grad_norm = node.get<double>("max_grad_norm", s.max_grad_norm);
  check(s.max_grad_norm >= 0, file, prefix + "max_grad_norm", ">= 0 (0: no clipping)");
  s.dropout = node.get<double>("dropout", s.dropout);
  check(s.dropout >= 0 && s.dropout < 1, file, prefix + "dropout", "in [0, 1)");
  s.hf_two_layer = node.choice("head", "official", {"official", "hf_two_layer"}) == "hf_two_layer";
  s.swap_augment = node.get<bool>("swap_augment", s.swap_augment);
  s.seed = node.get<uint64_t>("seed", s.seed);
  s.device = node.choice("device", s.device, {"auto", "cpu", "cuda"});
  s.threads = node.get<int64_t>("threads", s.threads);
  check(s.threads >= 0 && s.threads <= kMaxCpuThreads, file, prefix + "threads",
        "in [0, 1024] (0: all cores)");
  s.precision =
      node.choice("precision", "bf16", {"bf16", "f32"}) == "f32" ? Precision::F32 : Precision::BF16;
  s.attention = attention_impl_named(
      node.choice("attention", "auto",
                  std::vector<std::string>(std::begin(kAttentionNames), std::end(kAttentionNames))),
      prefix + "attention");
  return s;
}

}  // namespace

FinetuneSettings FinetuneConfig::for_task(const std::string& task) const {
  const auto it = tasks.find(task);
  return it == tasks.end() ? defaults : it->second;
}

FinetuneConfig read_finetune_config(const std::string& path,
                                    const std::vector<std::string>& overrides,
                                    const std::vector<std::string>& known_tasks) {
  ConfigNode root = ConfigNode::load(path);
  for (const std::string& o : overrides) {
    // tasks.<task>.<key> may name a task the file has no section for.
    bool task_key = false;
    for (const std::string& task : known_tasks) {
      for (const char* key : kTaskKeys) {
        task_key = task_key || o.rfind(str_cat("tasks.", task, ".", key, "="), 0) == 0;
      }
    }
    root.apply_override(o, task_key);
  }
  FinetuneConfig c;
  c.path = path;
  c.defaults =
      read_settings(root.section("finetune"), FinetuneSettings{}, path, "finetune.", false);
  ConfigNode squad = root.section("squad");
  FinetuneSettings& d = c.defaults;
  d.doc_stride = squad.get<int64_t>("doc_stride", d.doc_stride);
  check(d.doc_stride > 0, path, "squad.doc_stride", "positive");
  d.max_query_length = squad.get<int64_t>("max_query_length", d.max_query_length);
  check(d.max_query_length > 0, path, "squad.max_query_length", "positive");
  d.max_answer_length = squad.get<int64_t>("max_answer_length", d.max_answer_length);
  check(d.max_answer_length > 0, path, "squad.max_answer_length", "positive");
  d.n_best = squad.get<int64_t>("n_best", d.n_best);
  check(d.n_best > 0, path, "squad.n_best", "positive");
  d.null_threshold = squad.get<double>("null_threshold", d.null_threshold);
  ConfigNode tasks = root.section("tasks");
  for (const std::string& task : known_tasks) {
    if (!tasks.has(task)) continue;
    c.tasks[task] =
        read_settings(tasks.section(task), c.defaults, path, str_cat("tasks.", task, "."), true);
  }
  root.finish();
  return c;
}

}  // namespace electra::apps
