// The device a command runs on: the GPU when asked ("cuda") or when one is usable ("auto"), else
// the CPU, with a one-line description for the start of a run.
#pragma once

#include <cstdint>
#include <string>

#include "engine/context.h"
#include "train/cpu_threads.h"

namespace electra::apps {

// `--threads N`: N (0: all cores) unless it exceeds kMaxCpuThreads (UserError naming `flag`).
int64_t checked_thread_count(const std::string& flag, uint64_t n);
// `--device D`: D when it is auto, cpu or cuda (UserError otherwise).
std::string checked_device_flag(const std::string& device);

struct RunDevice {
  Context ctx;
  std::string description;  // "NVIDIA H200 (sm_90, 139 GiB)" or "CPU (no GPU: ...)"
  bool gpu = false;
};

// `device`: "auto", "cpu" or "cuda" (`key` names the config key in errors). The CPU always runs
// f32, on `cpu_threads` threads (0: the cores this process may use, shared by the
// `ranks_on_node` ranks; the results are the same at any count); GPU `gpu_index` runs
// `precision` (data-parallel ranks pass their local rank, and `ranks_on_node` ranks need that
// many GPUs). UserError when "cuda" is asked for and no GPU can be used, or when the node has
// fewer GPUs than ranks.
RunDevice open_device(const std::string& device, Precision precision, uint64_t seed,
                      const std::string& key, int gpu_index = 0, int ranks_on_node = 1,
                      int64_t cpu_threads = 0);

// Dense bf16 peak FLOP/s of known data-centre GPUs (for MFU), 0 when unknown.
double bf16_peak_flops(const std::string& description);

}  // namespace electra::apps
