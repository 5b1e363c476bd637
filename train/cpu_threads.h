// The most CPU threads a run accepts: train.threads (train/pretrain_config.h), and through the
// commands finetune.threads and --threads (apps/run_device.h). A bound on input, not a tuning
// value: the results are the same at any count (docs/ARCHITECTURE.md, "CPU threads").
#pragma once

#include <cstdint>

namespace electra {

constexpr int64_t kMaxCpuThreads = 1024;

}  // namespace electra
