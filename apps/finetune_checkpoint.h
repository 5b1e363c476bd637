// A fine-tuned checkpoint: an HF model directory that HF transformers loads with the outputs the
// engine computes, plus finetune.json (task, head, epoch, scores, vocab_hash) and the tokenizer
// files (data/tokenizer_files.h).
//
// The official classification / regression head (one dense layer on [CLS], logits = W c + b) has
// no HF class; HF's ElectraForSequenceClassification computes out_proj(gelu(dense(c))). The
// checkpoint therefore holds the official head in that form, with the same outputs:
//   dense = identity [H, H], dense.bias = k,  out_proj.weight = W,  out_proj.bias = b - W k,
// where k_i = |gamma_i| sqrt(H - 1) + |beta_i| + 10 from the encoder's last LayerNorm (gamma,
// beta). A LayerNorm output satisfies |(x - mean) / std| <= sqrt(H - 1), so every c_i + k_i >= 10,
// where gelu(z) = z Phi(z) equals z in f32 and f64 (1 - Phi(10) < 1e-23): HF's logits are
// W (c + k) + b - W k = W c + b up to rounding. Loading it back (with_head) folds it again
// (b = out_proj.bias + W k) after checking that dense is exactly that identity.
//
// SQuAD 2.0's answerable classifier has no HF counterpart: such a checkpoint's config.json names
// the architecture ElectraForQuestionAnsweringWithAnswerableClassifier (not an HF class) and says
// in "electra_engine_note" what ElectraForQuestionAnswering would drop.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "data/tokenizer_files.h"
#include "models/finetune_model.h"

namespace electra::apps {

// Writes the model (HF layout, as above), `meta` plus "vocab_hash" as finetune.json, and the
// tokenizer files into dir.
void save_finetuned(Context& ctx, const ElectraFinetuner& model, const std::string& dir,
                    nlohmann::json meta, const data::ModelTokenizer& tokenizer);

// Loads the encoder from `model_dir` into the finetuner; with `with_head` also the task head (a
// fine-tuned checkpoint), else the head keeps its initialisation and any head tensors of the
// checkpoint (pre-training or another task) are skipped. Validated before anything is written.
void load_finetune_init(Context& ctx, ElectraFinetuner& model, const std::string& model_dir,
                        bool with_head);

// finetune.json of a fine-tuned checkpoint directory, or null when there is none; UserError
// naming the file when it is malformed or lacks "task".
nlohmann::json read_finetune_meta(const std::string& dir);

// The tokenizer of model directory `model_dir` (data/tokenizer_files.h). A directory without
// tokenizer files takes `vocab_path` (--vocab) and its casing; with them, a --vocab that is not
// the same vocabulary, or a vocab.txt whose hash is not the vocab_hash finetune.json recorded, is a
// UserError naming both files.
data::ModelTokenizer checkpoint_tokenizer(const std::string& vocab_path,
                                          const std::string& model_dir);

// UserError when `dir` is a fine-tuned checkpoint (finetune.json) of another task than `task`
// (lower-case: "sts-b", "squad1.1", ...).
void check_checkpoint_task(const std::string& dir, const std::string& task);

}  // namespace electra::apps
