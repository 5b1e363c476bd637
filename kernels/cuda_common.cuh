// Device helpers shared by the kernels: bf16/f32 conversion, warp and block reductions,
// 16-byte vector access, launch arithmetic. Include only from .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "engine/cuda_check.h"
#include "engine/tensor.h"

namespace electra::cuda {

constexpr int kWarpSize = 32;

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  }
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  }
  return x;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` holds 32 floats of shared memory. Deterministic: a fixed reduction tree.
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  x = warp_sum(x);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(x);
}

__device__ __forceinline__ float block_max(float x, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(x);
}

// 16 bytes of T (4 floats or 8 bf16) loaded or stored in one instruction.
template <class T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

template <class T>
__device__ __forceinline__ Pack<T> load_pack(const T* p) {
  Pack<T> out;
  *reinterpret_cast<int4*>(&out) = *reinterpret_cast<const int4*>(p);
  return out;
}

template <class T>
__device__ __forceinline__ void store_pack(T* p, const Pack<T>& pack) {
  *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(&pack);
}

// V consecutive elements of T converted to/from f32: V = 1 scalar, V = 8 through 16-byte packs
// (one bf16 pack or two f32 packs; p must be 16-byte aligned).
template <int V, class T>
__device__ __forceinline__ void load_vec(const T* p, float* out) {
  if constexpr (V == 1) {
    out[0] = to_float(p[0]);
  } else {
    constexpr int kPack = Pack<T>::kSize;
    for (int q = 0; q < V / kPack; ++q) {
      const Pack<T> pack = load_pack(p + q * kPack);
      for (int j = 0; j < kPack; ++j) out[q * kPack + j] = to_float(pack.v[j]);
    }
  }
}

template <int V, class T>
__device__ __forceinline__ void store_vec(T* p, const float* in) {
  if constexpr (V == 1) {
    p[0] = from_float<T>(in[0]);
  } else {
    constexpr int kPack = Pack<T>::kSize;
    for (int q = 0; q < V / kPack; ++q) {
      Pack<T> pack;
      for (int j = 0; j < kPack; ++j) pack.v[j] = from_float<T>(in[q * kPack + j]);
      store_pack(p + q * kPack, pack);
    }
  }
}

inline bool is_aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// 8-wide 16-byte access (load_vec<8> / store_vec<8>) is possible: `count` (the row length or
// element count walked in groups of 8) is a multiple of 8 and every non-null pointer is aligned.
inline bool vectorizable(int64_t count, std::initializer_list<const void*> ptrs) {
  bool ok = count % 8 == 0;
  for (const void* p : ptrs) ok = ok && (p == nullptr || is_aligned16(p));
  return ok;
}

// Calls f(T{}) with T = float for F32 and __nv_bfloat16 for BF16, the GPU activation dtypes; throws
// Error naming the op and the tensor otherwise. The kernels' counterpart of dispatch_cpu_float.
template <class F>
void dispatch_activation(const Tensor& act, const char* op, F&& f) {
  if (act.dtype == DType::F32) {
    f(float{});
  } else if (act.dtype == DType::BF16) {
    f(__nv_bfloat16{});
  } else {
    throw Error(str_cat(op, " (cuda): activations must be f32 or bf16, got ", act.str()));
  }
}

}  // namespace electra::cuda
