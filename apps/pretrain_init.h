// Continued pre-training: `electra pretrain --init DIR [--init-generator GEN_DIR]` starts a new
// run from existing weights: the optimizer moments are zero and the learning-rate schedule, the
// step counter and the data cursor start at 0 (only the weights are taken). DIR is
//   - a checkpoint of this engine (checkpoint-<step>/, apps/trainer_checkpoint.h), or a run
//     directory (its newest complete checkpoint);
//   - a directory holding discriminator/ (HF ElectraForPreTraining) and generator/
//     (HF ElectraForMaskedLM) model directories, as our checkpoints and exports lay them out;
//   - with --init-generator, DIR is the discriminator's HF model directory and GEN_DIR the
//     generator's (the released google/electra-*-discriminator and -generator come so).
// The model sizes are the two config.json files': when the run's YAML has no model section they
// become the run's model, otherwise they must equal it. The vocabulary (data.vocab, whose hash the
// shards carry) must have the checkpoint's vocab_size, and the hash of a vocab.txt found with the
// checkpoint. The generator and the discriminator share the embedding tables (with sharing: all,
// the whole encoder): when the two directories hold different copies (models not trained
// together), the discriminator's is used, and the run says so. With sharing: gdes the
// discriminator's residual tables become its tables minus the generator's (docs/OBJECTIVES.md).
//
//
// An `objective: mlm` checkpoint (or export) has discriminator/ alone, an ElectraForMaskedLM of the
// discriminator's size, and no generator. --init takes it as follows (docs/OBJECTIVES.md):
//   - objective mlm: everything (encoder and MLM head), as from any checkpoint;
//   - replace-mlm, all-tokens-mlm: the encoder and the MLM head; the generator (and
//     all-tokens-mlm's copy head) start from fresh weights (init_weights with train.seed);
//   - electra, electra-15: the encoder becomes the discriminator's; the generator and the binary
//     head start fresh.
// The run says which parts start fresh. Conversely `objective: mlm` from an ELECTRA checkpoint
// takes the discriminator's encoder; its MLM head starts fresh and the generator is dropped.
//
// `--resume` stays what it is: the same run continued bit-exactly (same config, optimizer state,
// step and data position). Both options reject a directory of the wrong kind with a message that
// says what it is and what was probably meant (a generator alone given to --init, an HF model
// directory given to --resume).
#pragma once

#include <optional>
#include <string>

#include "engine/context.h"
#include "models/pretrainer.h"
#include "train/pretrain_config.h"

namespace electra::apps {

// Where a new run's weights come from.
struct InitSource {
  std::string discriminator_dir;  // HF ElectraForPreTraining: config.json, model.safetensors
  std::string generator_dir;      // HF ElectraForMaskedLM; empty for an mlm checkpoint
  std::string description;        // for messages: "checkpoint X (step N)", "HF models X and Y"
  std::string run_dir;            // the run directory of a checkpoint of ours; empty otherwise
  ElectraConfig model;            // the sizes of the two config.json files
  // adopt_init_source sets the run's train.seed: the parts the source lacks start from
  // init_weights(fresh_seed).
  uint64_t fresh_seed = 0;
};

// --init DIR [--init-generator GEN_DIR] (see the top of this file). UserError saying what DIR is
// and what was probably meant when it is none of those: a generator alone, a discriminator
// without its generator, one half of a checkpoint, a fine-tuned model, or neither. The generator
// must have the sizes the engine derives from the discriminator (models/electra_config.h).
InitSource find_init_source(const std::string& init, const std::string& init_generator);

// Makes `config` fit a run that starts from `source`: takes its model when the YAML has no model
// section, else requires equal sizes; requires data.vocab to have the checkpoint's vocabulary;
// refuses a checkpoint.dir that is the run directory the weights come from (the new run's
// checkpoints would replace its). Each mismatch is a one-line UserError naming both values.
void adopt_init_source(PretrainConfig& config, const InitSource& source);

// --resume DIR: the checkpoint to resume (resolve_checkpoint), or a UserError saying what DIR is
// when it holds no training checkpoint (an HF model directory, weights without trainer state:
// start from them with --init).
std::string resolve_resume_checkpoint(const std::string& dir);

// What the command line says about the start of the run, checked together: --init and --resume
// exclude each other, --init-generator needs --init, the directory of --resume holds a training
// checkpoint (resolve_resume_checkpoint). Returns the source of --init (config adopted); with
// --resume and no model section in the YAML, config takes the resumed checkpoint's model.
std::optional<InitSource> resolve_start(PretrainConfig& config, const std::string& init,
                                        const std::string& init_generator,
                                        const std::string& resume);

// Loads the source's weights into `model` (everything validated first) and refreshes the compute
// copy; with `report`, prints where they came from, which parts start fresh (an mlm checkpoint,
// or objective mlm from an ELECTRA one: see the top of this file) and, when the two models' copies
// of the shared embedding tables differ, which copy is used.
void load_init_weights(Context& ctx, ElectraPretrainer& model, const InitSource& source,
                       bool report);

}  // namespace electra::apps
