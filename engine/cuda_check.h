// Checking macros for CUDA runtime and cuBLAS(Lt) calls. Include only from files that are compiled
// with CUDA (ELECTRA_WITH_CUDA); every such call in the project goes through one. NCCL's macro is
// in engine/communicator_nccl_cuda.cpp, the one file that includes nccl.h: NCCL is optional.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/error.h"

#define ELECTRA_CUDA_CHECK(call)                                                             \
  do {                                                                                       \
    cudaError_t electra_status_ = (call);                                                    \
    if (electra_status_ != cudaSuccess) {                                                    \
      ::electra::throw_api_failure("CUDA", #call, static_cast<long>(electra_status_),        \
                                   cudaGetErrorName(electra_status_),                        \
                                   cudaGetErrorString(electra_status_), __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)

// Checks the last kernel launch (configuration errors) without synchronising.
#define ELECTRA_CUDA_CHECK_LAUNCH() ELECTRA_CUDA_CHECK(cudaGetLastError())

#define ELECTRA_CUBLAS_CHECK(call)                                                              \
  do {                                                                                          \
    cublasStatus_t electra_status_ = (call);                                                    \
    if (electra_status_ != CUBLAS_STATUS_SUCCESS) {                                             \
      ::electra::throw_api_failure("cuBLAS", #call, static_cast<long>(electra_status_),         \
                                   cublasGetStatusName(electra_status_),                        \
                                   cublasGetStatusString(electra_status_), __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)
