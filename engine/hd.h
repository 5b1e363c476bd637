// ELECTRA_HD marks functions compiled for both the host and the device, so that the CPU
// reference and the CUDA kernel share one implementation (RNG, bf16 rounding, portable math).
#pragma once

#if defined(__CUDACC__)
#define ELECTRA_HD __host__ __device__ __forceinline__
#else
#define ELECTRA_HD inline
#endif

// `#pragma unroll` in an ELECTRA_HD function: the device compiler's, nothing for a host compiler
// (which would warn about an unknown pragma).
#if defined(__CUDA_ARCH__)
#define ELECTRA_HD_UNROLL _Pragma("unroll")
#else
#define ELECTRA_HD_UNROLL
#endif
