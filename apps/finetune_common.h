// What every fine-tuning task shares: finding the encoder to start from (--init), loading it into
// an ElectraFinetuner, the optimizer with layer-wise LR decay and the warm-up + linear-decay
// schedule, and writing a fine-tuned checkpoint.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "apps/finetune_checkpoint.h"
#include "apps/finetune_config.h"
#include "data/vocab.h"
#include "engine/timer.h"
#include "models/finetune_model.h"
#include "optim/optimizer.h"
#include "train/device_metrics.h"

namespace electra::apps {

// A model directory (config.json + model.safetensors) to initialise the discriminator from.
struct FinetuneInit {
  std::string model_dir;
  EncoderConfig encoder;
};

// `path` may be an HF ELECTRA discriminator directory (e.g. the layout of
// google/electra-small-discriminator), a fine-tuned checkpoint of ours, a pre-training checkpoint
// (its discriminator/ is used) or a pre-training run directory (its newest checkpoint). UserError
// naming the path otherwise.
FinetuneInit resolve_init(const std::string& path);

// The finetuner's batch, sequence length, padding id and GPU attention from the settings and the
// vocabulary.
FinetuneOptions model_options(const FinetuneSettings& settings, const data::Vocab& vocab);

// What the start-up line says of finetune.attention: on a GPU the kernels it picks ("attention
// flash (finetune.attention)"); on the CPU, only a choice there that has no effect ("" for auto).
std::string attention_note(const FinetuneSettings& settings, bool cuda);

// AdamW (settings.weight_decay, eps, clipping) with layer-wise LR decay over the encoder, the
// schedule lr * min(1, t / warmup) * max(0, 1 - t / total), warmup = warmup_fraction * total.
struct FinetuneOptimizer {
  FinetuneOptimizer(Context& ctx, const ElectraFinetuner& model, const FinetuneSettings& settings,
                    int64_t total_steps);
  Arena state;
  std::unique_ptr<Optimizer> optimizer;
  double lr = 0, decay = 0;
};

// One epoch of fine-tuning updates and its progress lines (every `log_every` updates and at the
// end of the epoch: the mean loss since the previous line, the lr, the ETA of the run). The losses
// and gradient norms accumulate on the device (DeviceMetrics, shared with the pre-training
// Trainer) and are read back only for a progress line, so an update with no line due transfers
// its batch and nothing else; the guard runs at that read.
class FinetuneEpoch {
 public:
  FinetuneEpoch(Context& ctx, std::string task, int64_t epoch, int64_t epochs,
                int64_t steps_per_epoch, int64_t total_steps, int64_t log_every);
  // Update i of this epoch (global update `step`, which the optimizer's device counter names) on
  // `batch`: gradients, the optimizer step (skipped by its kernels when the gradient norm is not
  // finite), and when a line is due the NaN guard (a UserError naming the task and the update)
  // and the line. Returns the line's mean loss, or nothing when no line was due.
  std::optional<double> update(Context& ctx, ElectraFinetuner& model, FinetuneOptimizer& opt,
                               const FinetuneBatch& batch, int64_t i, int64_t step);

 private:
  std::string task_;
  int64_t epoch_, epochs_, steps_per_epoch_, total_steps_, log_every_;
  DeviceMetrics metrics_;
  int64_t updates_since_line_ = 0;
  Stopwatch clock_;
};

// The median of `values` (the mean of the two middle ones for an even count).
double median(std::vector<double> values);

}  // namespace electra::apps
