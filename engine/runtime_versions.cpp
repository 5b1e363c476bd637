#include "engine/runtime_versions.h"

#include <fstream>
#include <sstream>

#include "engine/str.h"

#if ELECTRA_WITH_CUDA
#include <library_types.h>

#include "engine/cuda_check.h"
#endif

namespace electra {
namespace {

bool is_version_number(const std::string& token) {
  if (token.empty() || token.find('.') == std::string::npos) return false;
  for (const char c : token) {
    if ((c < '0' || c > '9') && c != '.') return false;
  }
  return token.front() != '.' && token.back() != '.';
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

#if ELECTRA_WITH_CUDA
// cuBLAS and cuBLASLt encode major * 10000 + minor * 100 + patch.
std::string cublas_code(size_t code) {
  return str_cat(code / 10000, ".", code / 100 % 100, ".", code % 100);
}

// The CUDA runtime and driver encode major * 1000 + minor * 10.
std::string cuda_code(int code) {
  return str_cat(code / 1000, ".", code % 1000 / 10);
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return "unknown (cublasGetProperty failed)";
  }
  return str_cat(major, ".", minor, ".", patch);
}
#endif

}  // namespace

std::string nvidia_module_version(const std::string& proc_text) {
  std::istringstream lines(proc_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("NVRM version:", 0) != 0) continue;
    std::istringstream tokens(line);
    std::string token;
    while (tokens >> token) {
      if (is_version_number(token)) return token;
    }
  }
  return "";
}

RuntimeVersions runtime_versions() {
  RuntimeVersions v;
  const std::string module = nvidia_module_version(read_file("/proc/driver/nvidia/version"));
#if ELECTRA_WITH_CUDA
  // 0 without a driver; the CUDA version the driver supports otherwise.
  int driver_cuda = 0;
  if (cudaDriverGetVersion(&driver_cuda) != cudaSuccess) driver_cuda = 0;
  if (driver_cuda > 0) {
    const std::string cuda = str_cat("CUDA ", cuda_code(driver_cuda));
    v.driver = module.empty() ? cuda : str_cat(module, " (", cuda, ")");
  }
  int runtime = 0;
  v.cuda_runtime = cudaRuntimeGetVersion(&runtime) == cudaSuccess
                       ? cuda_code(runtime)
                       : "unknown (cudaRuntimeGetVersion failed)";
  v.cublas = cublas_version();
  v.cublaslt = cublas_code(cublasLtGetVersion());
#else
  v.cuda_runtime = v.cublas = v.cublaslt = "not built (ELECTRA_CUDA=OFF)";
#endif
  if (v.driver.empty()) v.driver = module.empty() ? "none found" : module;
  v.nccl = nccl_runtime_version();
  return v;
}

}  // namespace electra
