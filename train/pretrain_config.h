// PretrainConfig: everything `electra pretrain` needs, read strictly from a YAML file
// (configs/electra-*.yaml) plus `--set section.key=value` overrides:
//
//   objective:   electra (default) | electra-15 | mlm | replace-mlm | all-tokens-mlm: the
//                pre-training objective (models/objective.h, docs/OBJECTIVES.md); mlm corrupts
//                the BERT way (80% [MASK], 10% random, 10% kept: the masking.mask_token_prob
//                of the generator's input does not apply, and describe() says so)
//   generator:   mlm (default: the small MLM generator trained alongside) | unigram: replacements
//                drawn from the unigram distribution of data.shards' tokens, counted when a run
//                starts and kept in its checkpoints; no generator is built (not with objective:
//                mlm, which has no replacements)
//   sharing:     embeddings (default: the generator and the discriminator share the token,
//                position and segment tables and the embedding LayerNorm) | none (the generator
//                has tables of its own) | all (every encoder weight tied; the generator must be
//                the discriminator's size: model.generator_multiplier 1) | gdes (DeBERTaV3: the
//                discriminator reads sg(generator's tables) + residuals of its own); paper
//                section 3.2; all and gdes need a generator model (not objective: mlm nor
//                generator: unigram)
//   generator_training: mle (default: the generator maximises the likelihood of the original
//                tokens) | adversarial (REINFORCE: the generator maximises the discriminator's
//                loss on its samples, with a learned baseline; paper Appendix F,
//                docs/OBJECTIVES.md); adversarial needs objective electra or electra-15, generator
//                mlm and masking.temperature 1
//   training:    joint (default: generator and discriminator trained together) | two-stage
//                (paper Figure 3 right: the generator alone with MLM for
//                two_stage.generator_steps updates, then the discriminator, initialised from the
//                generator's encoder, while the generator is frozen). two-stage needs a generator
//                of the discriminator's size (model.generator_multiplier giving the same hidden,
//                heads and FFN) and objective electra or electra-15 with generator: mlm
//   two_stage:   generator_steps (required with two-stage, in (0, train.steps); unused with
//                joint, and describe() says so)
//   model:       preset (tiny|small|base|large) then field overrides (models/electra_config.h)
//   data:        shards: a shard file or a directory of *.bin shards (`electra build-data`),
//                        several separated by commas;  vocab: the vocab.txt they were built with
//   masking:     mask_prob (0.15), mask_token_prob (0.85: the rest keep the original token),
//                mask_prob_schedule (constant | linear: the rate moves linearly from mask_prob
//                at the first update to mask_prob_end at the last; Ankner et al. 2023),
//                mask_prob_end (= mask_prob; used by the linear schedule only),
//                temperature (1.0: the temperature of the generator's sample)
//   train:       batch_size (128: sequences per optimizer update, over all ranks),
//                micro_batch_size (sequences per rank and forward/backward; 0 = batch_size /
//                ranks, no accumulation; else batch_size must be a multiple of it x ranks and
//                the difference is made up by gradient accumulation), seq_len (128), steps,
//                seed (1), disc_weight (50), device (auto|cpu|cuda), precision (bf16|f32: the
//                GPU's activation precision; the CPU always runs f32), cuda_graph (true: replay
//                each update from CUDA graphs; no effect on the CPU), overlap_generator (true:
//                the generator's backward on a second CUDA stream beside the discriminator's;
//                the same bits; no effect on the CPU), threads (0: the CPU
//                path's threads, 0 = all cores the process may use; not part of the config
//                hash: the results are bit-identical at any count)
//   optimizer:   kind, lr, beta1, beta2, eps, weight_decay, bias_correction, max_grad_norm
//   schedule:    kind (linear|constant|cosine), warmup_steps; the total is train.steps
//   checkpoint:  dir, every (updates between checkpoints; 0: only at the end), keep (how many
//                to keep; 0: all)
//   logging:     every (updates between progress lines and metrics records)
//   distributed: bucket_mb (25: size of a gradient all-reduce bucket, models/grad_sync.h),
//                timeout_s (600: a GPU collective that takes longer aborts the job: a rank died
//                or hangs)
//
// Every key is optional except data.shards and data.vocab (defaults as above and in
// OptimizerConfig). An unknown key or a wrong type is a UserError naming file:line and the dotted
// key; an override whose key is not in the file is an error too (so a typo cannot pass), which is
// why the shipped configs spell out every key. Paths (data.*, checkpoint.dir) are taken relative
// to the current directory, not to the config file; they are not opened here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/context.h"
#include "kernels/step_scalars.h"
#include "models/electra_config.h"
#include "models/pretrainer.h"
#include "optim/optimizer.h"

namespace electra {

enum class TrainDevice : uint8_t { kAuto, kCpu, kCuda };

struct MaskingConfig {
  double mask_prob = 0.15;
  double mask_token_prob = 0.85;
  double temperature = 1.0;
  bool linear_schedule = false;  // mask_prob_schedule: linear
  double mask_prob_end = 0.15;

  // The rate of each update of a run of `steps` updates, as the device's next_micro_step reads it.
  MaskRateSchedule schedule(int64_t steps) const;
  // The mask rate of update `step` (0-based) of a run of `steps` updates (f32, as the device
  // computes it: kernels/step_scalars.h).
  double mask_prob_at(int64_t step, int64_t steps) const;
  // The largest rate of the run: what the masked slots per sequence are sized for.
  double max_mask_prob() const {
    return linear_schedule ? std::max(mask_prob, mask_prob_end) : mask_prob;
  }
};

struct TrainConfig {
  int64_t batch_size = 128;
  int64_t micro_batch_size = 128;  // resolved for one rank: never 0 after reading
  bool micro_batch_auto = false;   // the file said 0: batch_size / ranks (set_ranks)
  int64_t seq_len = 128;
  int64_t steps = 1000000;
  uint64_t seed = 1;
  double disc_weight = 50.0;
  TrainDevice device = TrainDevice::kAuto;
  Precision precision = Precision::BF16;
  // Replay each update from CUDA graphs (train/trainer.h). No effect on the CPU, where describe()
  // says so; not part of canonical_text: graphs replay the same kernels, the results are the same.
  bool cuda_graph = true;
  // The generator's backward on a second CUDA stream beside the discriminator's
  // (PretrainOptions::overlap_generator; on by default since the 2026-11-28 H200 run measured the
  // Small update 8% faster with it, bench/RESULTS.md). Not part of canonical_text: the same bits
  // either way; no effect on the CPU (describe() says so).
  bool overlap_generator = true;
  int64_t threads = 0;  // CPU threads; 0: all cores this process may use

  // Micro-batches per update over all ranks.
  int64_t accumulation_steps() const { return batch_size / micro_batch_size; }
  // Resolves micro_batch_size for `ranks` ranks (batch_size / ranks when it was 0) and checks
  // that batch_size is a multiple of micro_batch_size x ranks (UserError naming the keys).
  void set_ranks(int64_t ranks);
  // Micro-batches per update on each of `ranks` ranks.
  int64_t local_accumulation(int64_t ranks) const { return accumulation_steps() / ranks; }
};

struct DistributedConfig {
  double bucket_mb = 25.0;
  double timeout_s = 600.0;
};

struct CheckpointConfig {
  std::string dir = "runs/electra";
  int64_t every = 10000;
  int64_t keep = 3;
};

// The variant (objective, generator, sharing, generator_training, training: the file's top-level
// keys) is the pretrainer's own (models/objective.h): pretrainer_options hands it on whole.
struct PretrainConfig : PretrainVariant {
  std::string path;             // the YAML file it was read from
  int64_t generator_steps = 0;  // two_stage.generator_steps (two-stage only)
  ElectraConfig model;
  // False when the file has no model section: `electra pretrain --init` (or --resume) then takes
  // the sizes from the checkpoint (apps/pretrain_init.h); otherwise model holds the defaults.
  bool model_given = true;
  std::vector<std::string> shards;
  std::string vocab;
  MaskingConfig masking;
  TrainConfig train;
  OptimizerConfig optimizer;
  CheckpointConfig checkpoint;
  int64_t log_every = 100;
  DistributedConfig distributed;

  // The pretrainer's options: this variant, and the shapes and numbers the file gives in f64 as
  // the model takes them (f32; the config keeps the file's values, which its hash covers): the
  // micro-batch (train.micro_batch_size, resolved by set_ranks), train.seq_len, the masked
  // slots sized for the run's largest mask rate (a schedule sets each update's: Trainer), the
  // corruption (masking.mask_token_prob; objective mlm's BERT 80/10/10 instead),
  // masking.temperature, train.disc_weight, and the vocabulary's special tokens.
  PretrainOptions pretrainer_options(const SpecialTokens& tokens = {}) const;
};

// Loads `path`, applies the overrides ("section.key=value", in order), reads and validates every
// section and rejects unknown keys. Throws UserError naming the file, line and key.
PretrainConfig read_pretrain_config(const std::string& path,
                                    const std::vector<std::string>& overrides);

// A few lines for the start of a run: model sizes, data, batch, optimizer, schedule, FLOPs, and
// what it runs on: `device` (RunDevice::description; `cuda`: a GPU) in `precision` (the context's:
// a CPU runs f32 whatever train.precision says) and whether updates replay CUDA graphs (never on
// the CPU, whatever train.cuda_graph says), beside what the config asked for.
std::string describe(const PretrainConfig& config, const std::string& device, Precision precision,
                     bool cuda);

// The settings that decide what training computes (model, data, masking, train, optimizer,
// schedule; not checkpoint, logging, distributed or the file's path), one "key=value" line each
// with round-trip precision, in a fixed order.
std::string canonical_text(const PretrainConfig& config);
// FNV-1a 64 of canonical_text: equal configs hash equal on every machine and build; used to
// refuse mismatched configs across ranks and on resume.
uint64_t config_hash(const PretrainConfig& config);

const char* train_device_name(TrainDevice device);

}  // namespace electra
