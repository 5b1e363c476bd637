// Fine-tuning and evaluating on one GLUE task: tokenisation of the TSV examples into fixed-length
// features, the training loop (epochs over a per-epoch permutation, AdamW with layer-wise LR
// decay, warm-up + linear decay), evaluation on every dev split after each epoch, the best
// checkpoint and its dev predictions, and GLUE submission files for the test splits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/finetune_common.h"
#include "data/glue_metrics.h"
#include "data/tokenizer_files.h"

namespace electra::apps {

struct GlueRunOptions {
  GlueTask task = GlueTask::kSST2;
  std::string data_dir;    // the task's directory: train.tsv, dev.tsv, test.tsv
  std::string output_dir;  // best/ (checkpoint), dev_predictions*.tsv, log lines
  FinetuneInit init;
  const data::ModelTokenizer* tokenizer = nullptr;
  FinetuneSettings settings;
  uint64_t seed = 1;
  int64_t max_train_examples = 0;  // 0: all (a prefix of train.tsv otherwise)
  int64_t max_eval_examples = 0;   // 0: all
  bool from_scratch = false;       // --init's sizes, freshly initialised weights (the baseline)
};

struct GlueRunResult {
  std::vector<GlueScore> best;  // on the first dev split, at the best epoch
  int64_t best_epoch = 0;
  double seconds = 0;
};

// Trains from opts.init and evaluates after each epoch (on the CPU or GPU as settings.device
// says); keeps the best epoch by the task's first metric.
GlueRunResult run_glue(const GlueRunOptions& opts);

// The scores of `checkpoint_dir` (a fine-tuned model of ours) on every dev split of the task;
// with predictions_out, each split's predictions (id, prediction, label, class probabilities) as
// a TSV file (the split's name inserted before the extension when the task has several).
std::vector<std::pair<std::string, std::vector<GlueScore>>> evaluate_glue_checkpoint(
    GlueTask task, const std::string& data_dir, const std::string& checkpoint_dir,
    const data::ModelTokenizer& tokenizer, const FinetuneSettings& settings, int64_t max_examples,
    const std::string& predictions_out = "");

// Writes GLUE submission files (<Task>.tsv: "index\tprediction" with label names, or scores for
// STS-B; MNLI-m / MNLI-mm for MNLI) for the test splits into output_dir, each with
// <Task>.probabilities.tsv beside it (class probabilities, or the unclipped score). Returns the
// paths.
std::vector<std::string> predict_glue_test(GlueTask task, const std::string& data_dir,
                                           const std::string& checkpoint_dir,
                                           const data::ModelTokenizer& tokenizer,
                                           const FinetuneSettings& settings,
                                           const std::string& output_dir);

// "mcc 0.5123, accuracy 0.8000"
std::string format_scores(const std::vector<GlueScore>& scores);

}  // namespace electra::apps
