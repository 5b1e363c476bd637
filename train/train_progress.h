// Progress of a training run: a line on stderr every `every` updates (losses, accuracies, lr,
// gradient norm, throughput, FLOP rate, ETA) and the same numbers as one JSON object per line in
// metrics.jsonl (appended to, so a resumed run continues the file; the lines of updates after
// the resume step, which a killed run logged after its last checkpoint, move to
// metrics.jsonl.discarded first, so that the file holds one curve).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "models/pretrainer.h"

namespace electra {

// The metrics of one optimizer update: the mean over its micro-batches.
struct UpdateMetrics {
  StepMetrics mean;
  int micro_batches = 0;

  void add(const StepMetrics& m);
  StepMetrics average() const;
};

struct ProgressConfig {
  int64_t total_steps = 0;
  int64_t every = 100;
  double sequences_per_step = 0;
  double tokens_per_step = 0;  // sequences x seq_len (padding included)
  double flops_per_step = 0;   // official conventions (models/flops.h)
  double peak_flops = 0;       // the device's bf16 peak for MFU; 0 = not known
  bool mlm = false;            // the objective trains a discriminator-sized MLM: show its loss
  bool adversarial = false;    // generator_training: adversarial: show the reward and baseline
  // Two-stage training: updates 1..generator_steps are stage 1 (the generator; flops_per_step),
  // the rest stage 2 (the discriminator; stage2_flops_per_step). Each line and record names its
  // stage. 0: joint training.
  int64_t generator_steps = 0;
  double stage2_flops_per_step = 0;
};

// Moves the lines of metrics_path that record updates after start_step to
// "<metrics_path>.discarded" (appended); the file is rewritten atomically. No file: nothing to do.
void truncate_metrics(const std::string& metrics_path, int64_t start_step);

class ProgressReporter {
 public:
  // Truncates `metrics_path` to start_step (truncate_metrics) and opens it for appending; throws
  // UserError naming it when it cannot be written.
  ProgressReporter(const ProgressConfig& config, const std::string& metrics_path,
                   int64_t start_step);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // After update `step` (1-based count of updates done) took `seconds`.
  void record(int64_t step, const StepMetrics& metrics, double lr, double grad_norm,
              double seconds);

  // "1h02m", "3m12s", "45s".
  static std::string format_duration(double seconds);

 private:
  ProgressConfig config_;
  std::FILE* metrics_ = nullptr;
  std::string metrics_path_;
  double window_seconds_ = 0;
  double window_flops_ = 0;  // the FLOPs of the window's updates (two stages differ)
  int64_t window_steps_ = 0;
  double total_seconds_ = 0;
};

}  // namespace electra
