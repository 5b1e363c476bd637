// electra finetune / eval / predict: GLUE (nine tasks) and SQuAD fine-tuning of the
// discriminator, with the paper's Table 7 hyper-parameters (configs/glue.yaml,
// configs/squad.yaml), several seeds and their median.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/command.h"
#include "apps/default_config.h"
#include "apps/finetune_glue.h"
#include "apps/finetune_squad.h"
#include "apps/run_device.h"

#include <nlohmann/json.hpp>

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kFinetuneUsage =
    "usage: electra finetune --task NAME --data-dir DIR --init CHECKPOINT [--config FILE]\n"
    "                        [--seeds N] [--set section.key=value]... [--output DIR]\n"
    "                        [--vocab vocab.txt] [--max-train N] [--max-eval N] [--from-scratch]\n"
    "                        [--threads N]\n"
    "  --task       a GLUE task: cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli; or\n"
    "               squad1.1, squad2.0\n"
    "  --data-dir   the task's directory (train.tsv, dev.tsv, test.tsv; SQuAD: train-v1.1.json,\n"
    "               dev-v1.1.json or the v2.0 files)\n"
    "  --init       an HF ELECTRA discriminator directory (config.json + model.safetensors), a\n"
    "               pre-training checkpoint of ours or its run directory (the newest checkpoint)\n"
    "  --config     hyper-parameters (default: configs/glue.yaml, configs/squad.yaml for SQuAD,\n"
    "               from $ELECTRA_CONFIG_DIR, <binary>/../share/electra-engine/configs, the\n"
    "               source tree of the binary, or the current repository, in that order)\n"
    "  --seeds      run N seeds (finetune.seed, +1, ...) and report each and the median\n"
    "  --output     where best/ (checkpoint), dev predictions go (default runs/finetune/TASK;\n"
    "               seed-N/ subdirectories with --seeds > 1)\n"
    "  --vocab      the vocabulary (default: vocab.txt of the --init directory)\n"
    "  --max-train, --max-eval   use only the first N examples (quick runs)\n"
    "  --from-scratch  take only the sizes from --init and start from random weights (the\n"
    "               baseline that shows what pre-training brings)\n"
    "  --threads    CPU threads (overrides finetune.threads; 0: all cores this process may use)\n";

constexpr const char* kEvalUsage =
    "usage: electra eval --task NAME --data-dir DIR --checkpoint DIR [--config FILE]\n"
    "                    [--set section.key=value]... [--vocab vocab.txt] [--max-eval N]\n"
    "                    [--output FILE] [--threads N]\n"
    "  scores a fine-tuned checkpoint (the best/ directory of `electra finetune`) on the dev\n"
    "  split(s) of the task and prints the task's metrics (SQuAD: EM/F1 on dev-v*.json).\n"
    "  The sequence lengths are the checkpoint's (finetune.json) unless --set gives them.\n"
    "  --output  GLUE: FILE.tsv, one line per dev example (id, prediction, label, then the\n"
    "            class probabilities or the full-precision score); MNLI writes "
    "FILE.dev_matched.tsv\n"
    "            and FILE.dev_mismatched.tsv; SQuAD: the predictions JSON\n";

constexpr const char* kPredictUsage =
    "usage: electra predict --task NAME --data-dir DIR --checkpoint DIR --output DIR\n"
    "                       [--config FILE] [--set section.key=value]... [--vocab vocab.txt]\n"
    "                       [--threads N]\n"
    "  writes the GLUE submission file(s) of the task's test split(s) (<Task>.tsv, MNLI-m.tsv /\n"
    "  MNLI-mm.tsv) into --output, and beside each <Task>.probabilities.tsv: every example's\n"
    "  prediction with the class probabilities (STS-B: the unclipped score, full precision);\n"
    "  SQuAD: predictions.json for dev-v*.json (the public split)\n";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The lower-case names a config's `tasks:` section may use.
std::vector<std::string> task_keys() {
  std::vector<std::string> keys;
  for (GlueTask t : all_glue_tasks()) keys.push_back(lower(glue_task_info(t).name));
  keys.push_back("squad1.1");
  keys.push_back("squad2.0");
  return keys;
}

// "squad1.1" / "squad2.0" (also "squad", "squad-v2", "squad2"): SQuAD; nullopt: a GLUE task.
std::optional<bool> squad_version(const std::string& task) {
  const std::string t = lower(task);
  if (t == "squad" || t == "squad1.1" || t == "squad-v1.1" || t == "squad1") return false;
  if (t == "squad2.0" || t == "squad-v2.0" || t == "squad2" || t == "squad-v2") return true;
  return std::nullopt;
}

// The task a command was given: SQuAD (its version) or a GLUE task, its display name and the
// lower-case key of its settings in a config's `tasks:` section.
struct TaskChoice {
  std::optional<bool> squad;        // true: SQuAD 2.0, false: 1.1, nullopt: GLUE
  GlueTask glue = GlueTask::kSST2;  // read only for a GLUE task
  std::string name, key;
};

TaskChoice choose_task(const std::string& task) {
  TaskChoice c;
  c.squad = squad_version(task);
  if (!c.squad) c.glue = parse_glue_task(task);
  c.name = c.squad ? (*c.squad ? "SQuAD2.0" : "SQuAD1.1") : glue_task_info(c.glue).name;
  c.key = c.squad ? (*c.squad ? "squad2.0" : "squad1.1") : lower(c.name);
  return c;
}

// The model's tokenizer (checkpoint_tokenizer), announced with where its casing came from.
data::ModelTokenizer load_tokenizer(const std::string& vocab, const std::string& model_dir) {
  data::ModelTokenizer t = checkpoint_tokenizer(vocab, model_dir);
  std::fprintf(stderr, "tokenizer: %s (%zu tokens), %s (%s)\n", t.vocab.source().c_str(),
               t.vocab.size(), t.lowercase ? "lower-cased" : "cased", t.casing_source.c_str());
  return t;
}

struct CommonArgs {
  std::string task, data_dir, config, vocab;
  std::vector<std::string> overrides;
  uint64_t max_eval = 0;
  std::optional<int64_t> threads;  // --threads: replaces finetune.threads
};

ArgParser& add_common(ArgParser& parser, CommonArgs& a) {
  return parser.value("--task", [&](const std::string& v) { a.task = v; })
      .value("--data-dir", [&](const std::string& v) { a.data_dir = v; })
      .value("--config", [&](const std::string& v) { a.config = v; })
      .value("--set", [&](const std::string& v) { a.overrides.push_back(v); })
      .value("--vocab", [&](const std::string& v) { a.vocab = v; })
      .count("--max-eval", [&](uint64_t n) { a.max_eval = n; })
      .count("--threads", [&](uint64_t n) { a.threads = checked_thread_count("--threads", n); });
}

// The settings of task `key` (lower-case) from --config or the task family's default file
// (apps/default_config.h), which is named on stderr.
FinetuneSettings settings_for(const CommonArgs& a, const TaskChoice& task) {
  std::string path = a.config;
  if (path.empty()) {
    const DefaultConfig found = find_default_config(task.squad ? "squad.yaml" : "glue.yaml");
    std::fprintf(stderr, "config: %s (the default, found %s; --config FILE to choose)\n",
                 found.path.c_str(), found.found.c_str());
    path = found.path;
  }
  FinetuneSettings settings =
      read_finetune_config(path, a.overrides, task_keys()).for_task(task.key);
  if (a.threads) settings.threads = *a.threads;
  return settings;
}

// eval and predict run a fine-tuned checkpoint with the sequence lengths it was trained with
// (finetune.json), unless --set gives them.
void use_recorded_lengths(FinetuneSettings& settings, const CommonArgs& a,
                          const std::string& model_dir) {
  const nlohmann::json meta = read_finetune_meta(model_dir);
  if (meta.is_null()) return;
  const auto recorded = [&](const char* key, const char* section, int64_t& field) {
    if (!meta.contains(key) || !meta.at(key).is_number_integer()) return;
    for (const std::string& o : a.overrides) {
      if (o.find(str_cat(".", key, "=")) != std::string::npos) return;
    }
    const int64_t value = meta.at(key).get<int64_t>();
    if (value == field) return;
    std::fprintf(stderr, "%s.%s %lld (recorded in %s/finetune.json)\n", section, key,
                 static_cast<long long>(value), model_dir.c_str());
    field = value;
  };
  recorded("max_seq_len", "finetune", settings.max_seq_len);
  recorded("doc_stride", "squad", settings.doc_stride);
  recorded("max_query_length", "squad", settings.max_query_length);
}

// The arguments of eval and predict: the common ones, --checkpoint (required) and --output
// (required by predict).
struct CheckpointArgs {
  CommonArgs common;
  std::string checkpoint, output;
};

// False when only --help was asked for.
bool parse_checkpoint_args(const char* command, const char* usage,
                           const std::vector<std::string>& args, bool output_required,
                           CheckpointArgs& a) {
  ArgParser parser(command, usage);
  add_common(parser, a.common)
      .value("--checkpoint", [&](const std::string& v) { a.checkpoint = v; })
      .value("--output", [&](const std::string& v) { a.output = v; });
  if (!parser.parse(args)) return false;
  parser.require(!a.common.task.empty(), "--task");
  parser.require(!a.common.data_dir.empty(), "--data-dir");
  parser.require(!a.checkpoint.empty(), "--checkpoint");
  if (output_required) parser.require(!a.output.empty(), "--output");
  return true;
}

// What eval and predict run: the task, the checkpoint's tokenizer and the task's settings with
// the sequence lengths the checkpoint was trained with.
struct CheckpointRun {
  TaskChoice task;
  data::ModelTokenizer tokenizer;
  FinetuneSettings settings;
};

CheckpointRun open_checkpoint(const CheckpointArgs& a) {
  const std::string model_dir = resolve_init(a.checkpoint).model_dir;
  CheckpointRun run{choose_task(a.common.task), load_tokenizer(a.common.vocab, model_dir), {}};
  run.settings = settings_for(a.common, run.task);
  use_recorded_lengths(run.settings, a.common, model_dir);
  return run;
}

}  // namespace

int cmd_finetune(const std::vector<std::string>& args) {
  CommonArgs common;
  std::string init, output;
  uint64_t seeds = 1, max_train = 0;
  bool from_scratch = false;
  ArgParser parser("finetune", kFinetuneUsage);
  add_common(parser, common)
      .value("--init", [&](const std::string& v) { init = v; })
      .value("--output", [&](const std::string& v) { output = v; })
      .count("--seeds", [&](uint64_t n) { seeds = n; })
      .count("--max-train", [&](uint64_t n) { max_train = n; })
      .switch_flag("--from-scratch", [&] { from_scratch = true; });
  if (!parser.parse(args)) return 0;
  parser.require(!common.task.empty(), "--task");
  parser.require(!common.data_dir.empty(), "--data-dir");
  parser.require(!init.empty(), "--init");
  ELECTRA_USER_CHECK(seeds >= 1, "--seeds must be at least 1");
  const TaskChoice task = choose_task(common.task);
  const std::optional<bool> squad = task.squad;
  const std::string &name = task.name, &key = task.key;
  const FinetuneSettings settings = settings_for(common, task);
  const FinetuneInit from = resolve_init(init);
  const data::ModelTokenizer tokenizer = load_tokenizer(common.vocab, from.model_dir);
  const data::Vocab& vocab = tokenizer.vocab;
  ELECTRA_USER_CHECK(static_cast<int64_t>(vocab.size()) == from.encoder.vocab_size, vocab.source(),
                     " has ", vocab.size(), " tokens but the model's vocab_size is ",
                     from.encoder.vocab_size);
  ELECTRA_USER_CHECK(!(squad && from_scratch), "--from-scratch is for GLUE tasks");
  if (output.empty()) output = (fs::path("runs/finetune") / key).string();

  std::vector<double> main_metric;
  std::string metric_name;
  for (uint64_t i = 0; i < seeds; ++i) {
    const uint64_t seed = settings.seed + i;
    const std::string out =
        seeds > 1 ? (fs::path(output) / str_cat("seed-", seed)).string() : output;
    if (squad) {
      SquadRunOptions run;
      run.v2 = *squad;
      run.data_dir = common.data_dir;
      run.output_dir = out;
      run.init = from;
      run.tokenizer = &tokenizer;
      run.settings = settings;
      run.seed = seed;
      run.max_train_examples = static_cast<int64_t>(max_train);
      run.max_eval_examples = static_cast<int64_t>(common.max_eval);
      run.null_threshold = settings.null_threshold;
      const SquadRunResult r = run_squad(run);
      std::printf("%s seed %llu: best epoch %lld: %s (%.0f s)\n", name.c_str(),
                  static_cast<unsigned long long>(seed), static_cast<long long>(r.best_epoch),
                  format_squad_scores(r.best).c_str(), r.seconds);
      main_metric.push_back(r.best.f1);
      metric_name = "f1";
    } else {
      GlueRunOptions run;
      run.task = task.glue;
      run.data_dir = common.data_dir;
      run.output_dir = out;
      run.init = from;
      run.tokenizer = &tokenizer;
      run.settings = settings;
      run.seed = seed;
      run.max_train_examples = static_cast<int64_t>(max_train);
      run.max_eval_examples = static_cast<int64_t>(common.max_eval);
      run.from_scratch = from_scratch;
      const GlueRunResult r = run_glue(run);
      std::printf("%s seed %llu: best epoch %lld: %s (%.0f s)\n", name.c_str(),
                  static_cast<unsigned long long>(seed), static_cast<long long>(r.best_epoch),
                  format_scores(r.best).c_str(), r.seconds);
      main_metric.push_back(r.best.front().value);
      metric_name = glue_metric_name(r.best.front().metric);
    }
    std::fflush(stdout);
  }
  if (seeds > 1) {
    std::printf("%s median over %llu seeds: %s %.4f\n", name.c_str(),
                static_cast<unsigned long long>(seeds), metric_name.c_str(), median(main_metric));
  }
  return 0;
}

int cmd_eval(const std::vector<std::string>& args) {
  CheckpointArgs a;
  if (!parse_checkpoint_args("eval", kEvalUsage, args, false, a)) return 0;
  const CommonArgs& common = a.common;
  const CheckpointRun run = open_checkpoint(a);
  const int64_t max_eval = static_cast<int64_t>(common.max_eval);
  if (const std::optional<bool> squad = run.task.squad) {
    const SquadScores scores = evaluate_squad_checkpoint(
        *squad, squad_file(common.data_dir, *squad, "dev"), a.checkpoint, run.tokenizer,
        run.settings, max_eval, a.output, run.settings.null_threshold);
    std::printf("%s dev: %s\n", run.task.name.c_str(), format_squad_scores(scores).c_str());
    return 0;
  }
  for (const auto& [split, scores] :
       evaluate_glue_checkpoint(run.task.glue, common.data_dir, a.checkpoint, run.tokenizer,
                                run.settings, max_eval, a.output)) {
    std::printf("%s %s: %s\n", run.task.name.c_str(), split.c_str(), format_scores(scores).c_str());
  }
  return 0;
}

int cmd_predict(const std::vector<std::string>& args) {
  CheckpointArgs a;
  if (!parse_checkpoint_args("predict", kPredictUsage, args, true, a)) return 0;
  const CommonArgs& common = a.common;
  const CheckpointRun run = open_checkpoint(a);
  if (const std::optional<bool> squad = run.task.squad) {
    fs::create_directories(a.output);
    const std::string path = (fs::path(a.output) / "predictions.json").string();
    evaluate_squad_checkpoint(*squad, squad_file(common.data_dir, *squad, "dev"), a.checkpoint,
                              run.tokenizer, run.settings, static_cast<int64_t>(common.max_eval),
                              path, run.settings.null_threshold);
    std::printf("wrote %s\n", path.c_str());
    return 0;
  }
  ELECTRA_USER_CHECK(common.max_eval == 0,
                     "--max-eval does not apply to GLUE predictions (a submission file holds "
                     "every test example)");
  for (const std::string& path : predict_glue_test(run.task.glue, common.data_dir, a.checkpoint,
                                                   run.tokenizer, run.settings, a.output)) {
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}

}  // namespace electra::apps
