// Pre-training checkpoints (DESIGN section 8). A checkpoint is a directory
//   <run dir>/checkpoint-<step, 8 digits>/
//     discriminator/{model.safetensors, config.json}   HF ElectraForPreTraining
//     generator/{model.safetensors, config.json}       HF ElectraForMaskedLM
//     trainer_state.safetensors                        optimizer moments m, v (f32, flat layout)
//     trainer_state.json                               step, data cursor, seed, config hash and
//     text
// written into "<run dir>/.checkpoint-<step>.tmp" and renamed into place when complete, so a
// crash or a full disk never leaves a half-written checkpoint under the final name, and older
// checkpoints are only removed (retention) after the new one is in place.
#pragma once

#include <cstdint>
#include <string>

#include "data/example_order.h"
#include "models/pretrainer.h"
#include "optim/optimizer.h"

namespace electra::apps {

struct TrainerState {
  int64_t step = 0;  // optimizer updates done
  data::DataCursor cursor;
  uint64_t seed = 0;
  uint64_t config_hash = 0;
  std::string config_text;  // canonical_text of the config (names what differs on a resume)
  double elapsed_seconds = 0;
};

// Writes the checkpoint of `state.step` into run_dir (created if missing) and keeps the newest
// `keep` checkpoints (0: all). Returns the checkpoint's path. Throws UserError naming the path
// when writing fails; the previous checkpoints are untouched then.
std::string save_checkpoint(Context& ctx, const ElectraPretrainer& model,
                            const Optimizer& optimizer, const TrainerState& state,
                            const std::string& run_dir, int64_t keep);

// `path` is a checkpoint directory or a run directory (then its newest complete checkpoint).
// Throws UserError when there is none.
std::string resolve_checkpoint(const std::string& path);

// Reads the trainer state of a checkpoint (trainer_state.json only).
TrainerState read_trainer_state(const std::string& checkpoint_dir);

// Loads models and optimizer moments. Everything is validated before anything is written: on a
// UserError (missing file, wrong shapes, a different model) model and optimizer are unchanged.
void load_checkpoint(Context& ctx, ElectraPretrainer& model, Optimizer& optimizer,
                     const std::string& checkpoint_dir);

}  // namespace electra::apps
