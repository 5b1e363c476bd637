#include "apps/run_device.h"

#include <algorithm>

namespace electra::apps {

RunDevice open_device(const std::string& device, Precision precision, uint64_t seed,
                      const std::string& key, int gpu_index, int ranks_on_node,
                      int64_t cpu_threads) {
  const bool usable = built_with_cuda() && cuda_device_count() > 0;
  const std::string why_not = built_with_cuda() ? cuda_unavailable_reason() : "built without CUDA";
  ELECTRA_USER_CHECK(device != "cuda" || usable, key, " is cuda but no GPU can be used: ", why_not);
  if (device != "cpu" && usable) {
    ELECTRA_USER_CHECK(ranks_on_node <= cuda_device_count(), ranks_on_node,
                       " ranks were started on this node but it has ", cuda_device_count(),
                       " GPUs: one GPU per rank (start at most that many ranks per node)");
    return RunDevice{Context::cuda(gpu_index, seed, precision), cuda_device_description(gpu_index),
                     true};
  }
  const int threads = cpu_threads > 0
                          ? static_cast<int>(std::min<int64_t>(cpu_threads, kMaxCpuThreads))
                          : std::max(1, available_cores() / std::max(1, ranks_on_node));
  return RunDevice{Context::cpu(seed, Precision::F32, threads),
                   str_cat(device == "cpu" ? "CPU" : str_cat("CPU (no GPU: ", why_not, ")"), ", ",
                           threads, threads == 1 ? " thread" : " threads"),
                   false};
}

int64_t checked_thread_count(const std::string& flag, uint64_t n) {
  ELECTRA_USER_CHECK(n <= static_cast<uint64_t>(kMaxCpuThreads), flag, " ", n, " is more than ",
                     kMaxCpuThreads, " threads (0: all cores)");
  return static_cast<int64_t>(n);
}

std::string checked_device_flag(const std::string& device) {
  ELECTRA_USER_CHECK(device == "auto" || device == "cpu" || device == "cuda",
                     "--device must be auto, cpu or cuda, got '", device, "'");
  return device;
}

double bf16_peak_flops(const std::string& description) {
  if (description.find("H100") != std::string::npos ||
      description.find("H200") != std::string::npos) {
    return 989.4e12;
  }
  if (description.find("A100") != std::string::npos) return 312e12;
  return 0;
}

}  // namespace electra::apps
