// electra finetune / eval / predict: GLUE (nine tasks) and SQuAD fine-tuning of the
// discriminator, with the paper's Table 7 hyper-parameters (configs/glue.yaml,
// configs/squad.yaml), several seeds and their median.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/command.h"
#include "apps/finetune_glue.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kFinetuneUsage =
    "usage: electra finetune --task NAME --data-dir DIR --init CHECKPOINT [--config FILE]\n"
    "                        [--seeds N] [--set section.key=value]... [--output DIR]\n"
    "                        [--vocab vocab.txt] [--max-train N] [--max-eval N] [--from-scratch]\n"
    "  --task       a GLUE task: cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli\n"
    "  --data-dir   the task's directory (train.tsv, dev.tsv, test.tsv)\n"
    "  --init       an HF ELECTRA discriminator directory (config.json + model.safetensors), a\n"
    "               pre-training checkpoint of ours or its run directory (the newest checkpoint)\n"
    "  --config     hyper-parameters (default configs/glue.yaml beside the binary's sources)\n"
    "  --seeds      run N seeds (finetune.seed, +1, ...) and report each and the median\n"
    "  --output     where best/ (checkpoint), dev_predictions.tsv go (default runs/finetune/TASK;\n"
    "               seed-N/ subdirectories with --seeds > 1)\n"
    "  --vocab      the vocabulary (default: vocab.txt of the --init directory)\n"
    "  --max-train, --max-eval   use only the first N examples (quick runs)\n"
    "  --from-scratch  take only the sizes from --init and start from random weights (the\n"
    "               baseline that shows what pre-training brings)\n";

constexpr const char* kEvalUsage =
    "usage: electra eval --task NAME --data-dir DIR --checkpoint DIR [--config FILE]\n"
    "                    [--set section.key=value]... [--vocab vocab.txt] [--max-eval N]\n"
    "  scores a fine-tuned checkpoint (the best/ directory of `electra finetune`) on the dev\n"
    "  split(s) of the task and prints the task's metrics\n";

constexpr const char* kPredictUsage =
    "usage: electra predict --task NAME --data-dir DIR --checkpoint DIR --output DIR\n"
    "                       [--config FILE] [--set section.key=value]... [--vocab vocab.txt]\n"
    "  writes the GLUE submission file(s) of the task's test split(s) (<Task>.tsv, MNLI-m.tsv /\n"
    "  MNLI-mm.tsv) into --output\n";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The lower-case names a config's `tasks:` section may use.
std::vector<std::string> task_keys() {
  std::vector<std::string> keys;
  for (GlueTask t : all_glue_tasks()) keys.push_back(lower(glue_task_info(t).name));
  return keys;
}

std::string default_config() {
  return std::string(ELECTRA_SOURCE_DIR) + "/configs/glue.yaml";
}

// --vocab, else vocab.txt next to the model.
data::Vocab load_vocab(const std::string& vocab, const std::string& model_dir) {
  const std::string path = vocab.empty() ? (fs::path(model_dir) / "vocab.txt").string() : vocab;
  ELECTRA_USER_CHECK(
      fs::exists(path), path,
      ": no vocabulary (pass --vocab with the vocab.txt the model was trained with)");
  return data::Vocab::load(path);
}

struct CommonArgs {
  std::string task, data_dir, config, vocab;
  std::vector<std::string> overrides;
  uint64_t max_eval = 0;
};

ArgParser& add_common(ArgParser& parser, CommonArgs& a) {
  return parser.value("--task", [&](const std::string& v) { a.task = v; })
      .value("--data-dir", [&](const std::string& v) { a.data_dir = v; })
      .value("--config", [&](const std::string& v) { a.config = v; })
      .value("--set", [&](const std::string& v) { a.overrides.push_back(v); })
      .value("--vocab", [&](const std::string& v) { a.vocab = v; })
      .count("--max-eval", [&](uint64_t n) { a.max_eval = n; });
}

FinetuneSettings settings_for(const CommonArgs& a, GlueTask task) {
  const FinetuneConfig config = read_finetune_config(a.config.empty() ? default_config() : a.config,
                                                     a.overrides, task_keys());
  return config.for_task(lower(glue_task_info(task).name));
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
  const GlueTask task = parse_glue_task(common.task);
  const GlueTaskInfo& info = glue_task_info(task);
  const FinetuneSettings settings = settings_for(common, task);
  const FinetuneInit from = resolve_init(init);
  const data::Vocab vocab = load_vocab(common.vocab, from.model_dir);
  ELECTRA_USER_CHECK(static_cast<int64_t>(vocab.size()) == from.encoder.vocab_size, vocab.source(),
                     " has ", vocab.size(), " tokens but the model's vocab_size is ",
                     from.encoder.vocab_size);
  if (output.empty()) output = (fs::path("runs/finetune") / lower(info.name)).string();

  std::vector<double> main_metric;
  for (uint64_t i = 0; i < seeds; ++i) {
    GlueRunOptions run;
    run.task = task;
    run.data_dir = common.data_dir;
    run.output_dir =
        seeds > 1 ? (fs::path(output) / str_cat("seed-", settings.seed + i)).string() : output;
    run.init = from;
    run.vocab = &vocab;
    run.settings = settings;
    run.seed = settings.seed + i;
    run.max_train_examples = static_cast<int64_t>(max_train);
    run.max_eval_examples = static_cast<int64_t>(common.max_eval);
    run.from_scratch = from_scratch;
    const GlueRunResult r = run_glue(run);
    std::printf("%s seed %llu: best epoch %lld: %s (%.0f s)\n", info.name.c_str(),
                static_cast<unsigned long long>(run.seed), static_cast<long long>(r.best_epoch),
                format_scores(r.best).c_str(), r.seconds);
    std::fflush(stdout);
    main_metric.push_back(r.best.front().value);
  }
  if (seeds > 1) {
    std::printf("%s median over %llu seeds: %s %.4f\n", info.name.c_str(),
                static_cast<unsigned long long>(seeds),
                std::string(glue_metric_name(info.metrics.front())).c_str(), median(main_metric));
  }
  return 0;
}

int cmd_eval(const std::vector<std::string>& args) {
  CommonArgs common;
  std::string checkpoint;
  ArgParser parser("eval", kEvalUsage);
  add_common(parser, common).value("--checkpoint", [&](const std::string& v) { checkpoint = v; });
  if (!parser.parse(args)) return 0;
  parser.require(!common.task.empty(), "--task");
  parser.require(!common.data_dir.empty(), "--data-dir");
  parser.require(!checkpoint.empty(), "--checkpoint");
  const GlueTask task = parse_glue_task(common.task);
  const FinetuneSettings settings = settings_for(common, task);
  const data::Vocab vocab = load_vocab(common.vocab, resolve_init(checkpoint).model_dir);
  for (const auto& [split, scores] :
       evaluate_glue_checkpoint(task, common.data_dir, checkpoint, vocab, settings,
                                static_cast<int64_t>(common.max_eval))) {
    std::printf("%s %s: %s\n", glue_task_info(task).name.c_str(), split.c_str(),
                format_scores(scores).c_str());
  }
  return 0;
}

int cmd_predict(const std::vector<std::string>& args) {
  CommonArgs common;
  std::string checkpoint, output;
  ArgParser parser("predict", kPredictUsage);
  add_common(parser, common)
      .value("--checkpoint", [&](const std::string& v) { checkpoint = v; })
      .value("--output", [&](const std::string& v) { output = v; });
  if (!parser.parse(args)) return 0;
  parser.require(!common.task.empty(), "--task");
  parser.require(!common.data_dir.empty(), "--data-dir");
  parser.require(!checkpoint.empty(), "--checkpoint");
  parser.require(!output.empty(), "--output");
  const GlueTask task = parse_glue_task(common.task);
  const FinetuneSettings settings = settings_for(common, task);
  const data::Vocab vocab = load_vocab(common.vocab, resolve_init(checkpoint).model_dir);
  for (const std::string& path :
       predict_glue_test(task, common.data_dir, checkpoint, vocab, settings, output)) {
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}

}  // namespace electra::apps
