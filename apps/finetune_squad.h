// Fine-tuning and evaluating on SQuAD 1.1 / 2.0 (the span head of ElectraFinetuner): reading the
// JSON, sliding-window featurisation (data/squad_features.h), the training loop over a per-epoch
// permutation of the features (AdamW with layer-wise LR decay, warm-up + linear decay),
// evaluation after each epoch (answer extraction, data/squad_answer.h; official EM/F1,
// data/squad_metrics.h), the best checkpoint and its dev predictions in SQuAD's official format.
//
// Conventions, as the official ELECTRA (and BERT) run_squad code:
//   - Training keeps every window. A window that does not contain the whole answer, and every
//     window of an impossible (2.0) question, is trained to point at [CLS]: start = end = 0. This
//     holds for 1.1 too. The answerability label (2.0) is the example's is_impossible, the same
//     for all its windows.
//   - Windows are shuffled as features (an example's windows are trained independently).
//   - 2.0 decision: with the answerable classifier (the head we train) the question gets "" when
//     the least answerable logit over its windows (the logit of "impossible") exceeds
//     null_threshold; 0 means P(impossible) > 1/2. The official code writes its test predictions
//     with qa_na_threshold = -2.75, tuned for its own head. A checkpoint without the classifier
//     (an HF ElectraForQuestionAnswering) uses BERT's rule instead: "" when the null score
//     start[0] + end[0] beats the best span by more than null_threshold (answer_or_null).
//   - The best epoch is the one with the highest dev F1 (the first on a tie).
#pragma once

#include <cstdint>
#include <string>

#include "apps/finetune_common.h"
#include "data/squad_metrics.h"
#include "data/tokenizer_files.h"

namespace electra::apps {

struct SquadRunOptions {
  bool v2 = false;         // SQuAD 2.0 (impossible questions, the answerable classifier)
  std::string data_dir;    // train-v1.1.json and dev-v1.1.json (or train-v2.0.json, dev-v2.0.json)
  std::string output_dir;  // best/ (checkpoint, finetune.json, vocab.txt), dev_predictions.json
  FinetuneInit init;
  const data::ModelTokenizer* tokenizer = nullptr;
  FinetuneSettings
      settings;  // max_seq_len, doc_stride, max_query_length, max_answer_length, n_best
  uint64_t seed = 1;
  int64_t max_train_examples = 0;  // 0: all (a prefix of the questions otherwise)
  int64_t max_eval_examples = 0;   // 0: all
  double null_threshold = 0;       // 2.0 only: see the top of this file
};

struct SquadRunResult {
  SquadScores best;  // dev scores at the best epoch
  int64_t best_epoch = 0;
  double seconds = 0;
};

// Trains from opts.init and evaluates on dev after each epoch (on the CPU or GPU as
// settings.device says); keeps the best epoch by F1 and writes output_dir/best/ and
// output_dir/dev_predictions.json ({"question id": "answer text"}) for it.
SquadRunResult run_squad(const SquadRunOptions& opts);

// The scores of `checkpoint_dir` (a fine-tuned model of ours, or an HF
// ElectraForQuestionAnswering directory) on `dev_json` (its first max_examples questions; 0: all).
// Writes the predictions in the official format to predictions_json_out unless it is empty.
SquadScores evaluate_squad_checkpoint(bool v2, const std::string& dev_json,
                                      const std::string& checkpoint_dir,
                                      const data::ModelTokenizer& tokenizer,
                                      const FinetuneSettings& settings, int64_t max_examples,
                                      const std::string& predictions_json_out,
                                      double null_threshold = 0);

// <data_dir>/<split>-v1.1.json (v2: <split>-v2.0.json), split "train" or "dev"; UserError naming
// the file when it does not exist.
std::string squad_file(const std::string& data_dir, bool v2, const std::string& split);

// "EM 81.23, F1 88.45" (percentages, as the official script prints them); with unanswerable
// questions also "(has answer: EM .., F1 .. over n; no answer: EM .. over m)".
std::string format_squad_scores(const SquadScores& scores);

}  // namespace electra::apps
