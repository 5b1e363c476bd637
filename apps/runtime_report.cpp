#include "apps/runtime_report.h"

#include "engine/device.h"
#include "engine/runtime_versions.h"

namespace electra::apps {

void print_runtime_report(std::FILE* out, const char* prefix) {
  const int gpus = cuda_device_count();
  if (gpus == 0) {
    std::fprintf(out, "%sgpus: none found (%s)\n", prefix, cuda_unavailable_reason().c_str());
  }
  for (int i = 0; i < gpus; ++i) {
    std::fprintf(out, "%sgpu %d: %s\n", prefix, i, cuda_device_description(i).c_str());
  }
  const RuntimeVersions v = runtime_versions();
  std::fprintf(out, "%sdriver: %s\n", prefix, v.driver.c_str());
  std::fprintf(out, "%scuda runtime: %s\n", prefix, v.cuda_runtime.c_str());
  std::fprintf(out, "%scublas: %s\n", prefix, v.cublas.c_str());
  std::fprintf(out, "%scublasLt: %s\n", prefix, v.cublaslt.c_str());
  std::fprintf(out, "%snccl: %s\n", prefix, v.nccl.c_str());
}

}  // namespace electra::apps
