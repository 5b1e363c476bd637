// ELECTRA_HD marks functions compiled for both the host and the device, so that the CPU
// reference and the CUDA kernel share one implementation (RNG, bf16 rounding, portable math).
#pragma once

#if defined(__CUDACC__)
#define ELECTRA_HD __host__ __device__ __forceinline__
#else
#define ELECTRA_HD inline
#endif
