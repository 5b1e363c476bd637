// Pre-training checkpoints. A checkpoint is a directory
//   <run dir>/checkpoint-<step, 8 digits>/
//     discriminator/{model.safetensors, config.json}   HF ElectraForPreTraining
//     generator/{model.safetensors, config.json}       HF ElectraForMaskedLM
//     trainer_state.safetensors                        optimizer moments m, v (f32, the flat
//                                                      layout without padding rows); with
//                                                      generator: unigram its counts, with
//                                                      sharing: gdes the exact residual tables
//                                                      (discriminator/ holds E_G + E_delta)
//     trainer_state.json                               step, data cursor, seed, config hash and
//                                                      text, the ranks x micro-batches that wrote
//                                                      it, the last update's losses, the shards
//                                                      read (name, bytes, payload checksum,
//                                                      examples: a resume on other data is refused)
// written into "<run dir>/.checkpoint-<step>.tmp" and renamed into place when complete, so a
// crash or a full disk never leaves a half-written checkpoint under the final name, and older
// checkpoints are only removed (retention) after the new one is in place.
//
// In a data-parallel run only rank 0 writes, and every rank reads: the data cursor is the same on
// every rank and does not depend on the number of ranks (data/example_order.h), so a checkpoint
// resumes on any number of ranks that divides the global batch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "data/example_order.h"
#include "data/shard_reader.h"
#include "data/vocab.h"
#include "models/pretrainer.h"
#include "optim/optimizer.h"

namespace electra {

// One shard of a run's data, as its header and size identify it.
struct ShardRecord {
  std::string name;  // file name (the directory is part of the config, hence of config_hash)
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // the header's payload checksum
  uint64_t examples = 0;
  bool operator==(const ShardRecord&) const = default;
};

std::vector<ShardRecord> record_shards(const data::ShardSet& shards);

struct TrainerState {
  int64_t step = 0;  // optimizer updates done
  data::DataCursor cursor;
  uint64_t seed = 0;
  uint64_t config_hash = 0;
  std::string config_text;  // canonical_text of the config (names what differs on a resume)
  double elapsed_seconds = 0;
  int64_t world_size = 1;          // ranks of the run that wrote it
  int64_t local_accumulation = 1;  // micro-batches per update on each of those ranks
  // What computed its updates beyond the hashed config: "cpu" or the GPU (cuda_device_description:
  // another kind of GPU picks other cuBLASLt algorithms and launch shapes), and model.attention and
  // model.fused_layers (a GPU run's bits depend on them; the hash leaves them out). Empty (true) in
  // a checkpoint older than them.
  std::string device, attention;
  bool fused_layers = true;
  // The losses and accuracies of update `step` (over all ranks) and its gradient norm, at full
  // precision: what a run logged last, and what tests compare runs with.
  StepMetrics metrics;
  double grad_norm = 0;
  std::vector<ShardRecord> shards;  // the data the run reads
};

// What a resume from `saved` changes in the bits of the updates to come, though the configs hash
// the same: another device (the CPU, or another kind of GPU), or on a GPU another model.attention
// or model.fused_layers.
// Empty when nothing (or when the checkpoint does not say).
std::string resume_bits_note(const TrainerState& saved, const TrainerState& now);

// Writes the checkpoint of `state.step` into run_dir (created if missing) and keeps the newest
// `keep` checkpoints (0: all). With a vocabulary, the tokenizer files (vocab.txt,
// tokenizer_config.json, special_tokens_map.json: data/tokenizer_files.h) go into discriminator/
// and generator/ too, so that each is a complete model directory (fine-tuning and HF's
// AutoTokenizer find them there). Returns the checkpoint's path. Throws UserError naming the path
// when writing fails; the previous checkpoints are untouched then.
std::string save_checkpoint(Context& ctx, const ElectraPretrainer& model,
                            const Optimizer& optimizer, const TrainerState& state,
                            const std::string& run_dir, int64_t keep,
                            const data::Vocab* vocab = nullptr);

// `path` is a checkpoint directory or a run directory (then its newest complete checkpoint).
// Throws UserError when there is none.
std::string resolve_checkpoint(const std::string& path);

// Reads the trainer state of a checkpoint (trainer_state.json only). Counters must be integers
// below 2^32 (a step of 1e15 is refused, not rounded).
TrainerState read_trainer_state(const std::string& checkpoint_dir);

// The configuration the run of a checkpoint's models was started with: the `key=value` lines of
// "config" in the trainer_state.json beside `discriminator_dir` (masking.mask_prob=0.15, ...;
// keys at their defaults may be absent). nullopt when there is no trainer_state.json (an
// export); UserError naming the file when it is not JSON or has no "config" string.
std::optional<std::map<std::string, std::string>> read_run_config(
    const std::string& discriminator_dir);

// Refuses (UserError naming the checkpoint) a resume on data other than the saved run's: a shard
// added, removed or changed (what changed is named).
void check_resume_data(const TrainerState& saved, std::vector<ShardRecord> now,
                       const std::string& checkpoint_dir);
// Refuses a saved data cursor beyond the `examples` of the data.
void check_data_position(const TrainerState& saved, uint64_t examples,
                         const std::string& checkpoint_dir);

// Loads models and optimizer moments. Everything is validated before anything is written: on a
// UserError (missing file, wrong shapes, a different model) model and optimizer are unchanged.
void load_checkpoint(Context& ctx, ElectraPretrainer& model, Optimizer& optimizer,
                     const std::string& checkpoint_dir);

}  // namespace electra
