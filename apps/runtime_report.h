// What this electra runs with: its GPUs, the NVIDIA driver, and the CUDA runtime, cuBLAS,
// cuBLASLt and NCCL versions found at run time (engine/runtime_versions.h). `electra version`
// prints it; `electra pretrain` prints it first, so that a run's log names what it ran on.
#pragma once

#include <cstdio>

namespace electra::apps {

// One line per item, each starting with `prefix`.
void print_runtime_report(std::FILE* out, const char* prefix);

}  // namespace electra::apps
