// engine/runtime_versions.h: the driver's version read from /proc/driver/nvidia/version, and the
// CUDA libraries' versions asked at run time, decoded from the libraries' integer codes.
#include <catch2/catch.hpp>
#include <regex>
#include <string>

#include "engine/device.h"
#include "engine/runtime_versions.h"

#if ELECTRA_WITH_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#endif

using namespace electra;

TEST_CASE("the driver's version is the number on the NVRM line", "[runtime_versions]") {
  // The proprietary and the open kernel module, as the driver writes them.
  CHECK(nvidia_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu "
                              "Oct 30 19:43:11 UTC 2025\nGCC version:  gcc version 13.3.0\n") ==
        "580.159.04");
  CHECK(nvidia_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                              "570.86.15  Release Build  (dvs-builder@U16-I3-B13-4-3)  Thu Jan "
                              "23 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n") ==
        "570.86.15");
  // No driver (the file is absent and reads as ""), or no number: nothing.
  CHECK(nvidia_module_version("").empty());
  CHECK(nvidia_module_version("GCC version:  gcc version 12.2.0\n").empty());
  CHECK(nvidia_module_version("NVRM version: NVIDIA UNIX Kernel Module 2025 .5 5.\n").empty());
}

TEST_CASE("the libraries' versions are found at run time, without a GPU", "[runtime_versions]") {
  const RuntimeVersions v = runtime_versions();
  CHECK_FALSE(v.driver.empty());
  CHECK(v.nccl == nccl_runtime_version());
  const std::regex two(R"(\d+\.\d+)"), three(R"(\d+\.\d+\.\d+)");
  if (!built_with_cuda()) {
    CHECK(v.cuda_runtime == "not built (ELECTRA_CUDA=OFF)");
    CHECK(v.cublas == "not built (ELECTRA_CUDA=OFF)");
    CHECK(v.cublaslt == "not built (ELECTRA_CUDA=OFF)");
    return;
  }
#if ELECTRA_WITH_CUDA
  // The shared libraries' names pin the major version this binary was built against, so the
  // decoded codes must begin with the headers' major.
  CHECK(std::regex_match(v.cuda_runtime, two));
  CHECK(v.cuda_runtime.rfind(std::to_string(CUDART_VERSION / 1000) + ".", 0) == 0);
  CHECK(std::regex_match(v.cublas, three));
  CHECK(v.cublas.rfind(std::to_string(CUBLAS_VER_MAJOR) + ".", 0) == 0);
  CHECK(v.cublaslt == v.cublas);  // one package, one version
  CHECK((std::regex_match(v.nccl, three) || v.nccl.rfind("not built", 0) == 0));
#endif
}
