// The SIMT emulator's device side (docs/ARCHITECTURE.md, "The SIMT emulator"): force-included
// into every CUDA source that test/simt/rewrite.py turned into C++, it defines what nvcc would:
// the built-in variables, __shared__, the intrinsics the kernels call, the warp collectives, the
// launch, and the few PTX instructions written as inline asm. A block's threads run as fibers on
// the launching host thread (simt_scheduler.cpp); a barrier or a warp collective is where a fiber
// waits for the others, so everything between two of them runs as one piece.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

#include "test/simt/simt_host.h"

// __shared__ variables are per block, and a block's fibers run one block at a time on one host
// thread: a static is exactly one copy for the block.
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)
#define __builtin_assume(x) static_cast<void>(0)

// The built-in variables, set by the scheduler before it resumes a fiber (plain globals: one grid
// runs at a time in the process).
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
constexpr int warpSize = 32;

namespace simt {

// ---- Scheduler entry points (simt_scheduler.cpp) --------------------------------------------
// Blocks and their threads in reverse index order (also SIMT_ORDER=reverse in the environment).
void set_reverse_order(bool on);
void syncthreads();
int syncthreads_count(int predicate);
// A warp collective: the calling lane's `request` waits until every live lane of `mask` has
// called with the same `resolve`, which then runs once with all 32 requests (null for lanes not
// taking part) and fills in the results.
using Resolve = void (*)(void* const* requests, uint32_t mask);
void warp_collective(uint32_t mask, void* request, Resolve resolve);
unsigned char* dynamic_shared_base();
uint32_t shared_address(const void* p);
void* shared_pointer(uint32_t address);

template <class T>
T* dynamic_shared() {
  return reinterpret_cast<T*>(dynamic_shared_base());
}

// ---- Shuffles, ballots ------------------------------------------------------------------------
enum class ShflMode { kUp, kDown, kBfly, kIdx };
struct ShflRequest {
  uint64_t value;
  uint32_t b, c;
  ShflMode mode;
  uint64_t result;
};
void resolve_shfl(void* const* requests, uint32_t mask);

// PTX shfl.sync: c packs the clamp (bits 0-4) and the segment mask (bits 8-12).
inline uint64_t shfl(uint32_t mask, uint64_t value, ShflMode mode, uint32_t b, uint32_t c) {
  ShflRequest r{value, b, c, mode, 0};
  warp_collective(mask, &r, resolve_shfl);
  return r.result;
}

template <class T>
T shfl_as(uint32_t mask, T value, ShflMode mode, uint32_t b, uint32_t c) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = shfl(mask, bits, mode, b, c);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

struct BallotRequest {
  bool predicate;
  uint32_t result;
};
void resolve_ballot(void* const* requests, uint32_t mask);
void resolve_syncwarp(void* const* requests, uint32_t mask);

// ---- Inline PTX --------------------------------------------------------------------------------
// One asm operand: an output (read-write for "+") through its address, with its value on entry,
// or an input's bits (a signed integer sign-extended; an 'r' operand keeps the low 32 bits).
// Which is which, the instruction's text says (ptx_exec).
struct Operand {
  void* target;  // outputs
  size_t size;
  uint64_t bits;
};

template <class T>
Operand out(T& x) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  Operand o{&x, sizeof(T), 0};
  std::memcpy(&o.bits, &x, sizeof(T));
  return o;
}

template <class T>
Operand in(const T& x) {
  Operand o{nullptr, sizeof(T), 0};
  if constexpr (std::is_pointer_v<T>) {
    o.bits = reinterpret_cast<uintptr_t>(x);
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    o.bits = static_cast<uint64_t>(x);  // modulo 2^64: a negative value sign-extended
  } else {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    std::memcpy(&o.bits, &x, sizeof(T));
  }
  return o;
}

// Executes the PTX `text` (the instructions the kernels write as asm; others abort naming it).
void ptx_exec(const char* text, Operand* operands, int count);

template <class... Ops>
void ptx(const char* text, Ops... ops) {
  Operand list[sizeof...(Ops) + 1] = {ops...};
  ptx_exec(text, list, static_cast<int>(sizeof...(Ops)));
}

// ---- Launch ------------------------------------------------------------------------------------
struct LaunchConfig {
  dim3 grid, block;
  size_t bytes;
  cudaStream_t stream;
  std::source_location where;
};

// Runs the grid, or records it when `config.stream` is being captured; `kernel` is the
// function's address (its cudaFuncSetAttribute limits), `name` its source text (rewrite.py's; a
// graph node's name, qualified by the launching function's namespace) or null.
void launch_grid(const LaunchConfig& config, const void* kernel, const char* name,
                 std::function<void()> body);

struct Launch {
  LaunchConfig config;

  // `call` calls the kernel with the launch's arguments (rewrite.py's lambda), so that a kernel
  // template's arguments are deduced from them as nvcc does; no address, so no
  // cudaFuncSetAttribute limit (rewrite.py uses it only for launches without dynamic shared
  // memory).
  template <class Call>
  auto run_deduced(Call call, const char* name = nullptr) const {
    return [config = config, call, name](auto&&... args) {
      std::tuple<std::decay_t<decltype(args)>...> params(std::forward<decltype(args)>(args)...);
      launch_grid(config, nullptr, name, [call, params]() mutable { std::apply(call, params); });
    };
  }

  template <class... P>
  auto run(void (*kernel)(P...), const char* name = nullptr) const {
    return [config = config, kernel, name](auto&&... args) {
      // Converted to the parameters' types now, as a launch copies its arguments.
      std::tuple<std::decay_t<P>...> params(std::forward<decltype(args)>(args)...);
      launch_grid(config, reinterpret_cast<const void*>(kernel), name,
                  [kernel, params] { std::apply(kernel, params); });
    };
  }
};

inline Launch launch(dim3 grid, dim3 block, size_t bytes = 0, cudaStream_t stream = nullptr,
                     std::source_location where = std::source_location::current()) {
  return Launch{{grid, block, bytes, stream, where}};
}

}  // namespace simt

// The runtime's template overload that nvcc's cuda_runtime.h adds for a kernel's address.
template <class T>
cudaError_t cudaFuncSetAttribute(T* kernel, cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}

// The device's min and max overloads (CUDA's math_functions.h).
template <class A, class B>
requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B>
constexpr std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <class A, class B>
requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B>
constexpr std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}

// ---- Synchronisation and warp intrinsics ------------------------------------------------------
inline void __syncthreads() {
  simt::syncthreads();
}
inline int __syncthreads_count(int predicate) {
  return simt::syncthreads_count(predicate);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  simt::warp_collective(mask, nullptr, simt::resolve_syncwarp);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  simt::BallotRequest r{predicate != 0, 0};
  simt::warp_collective(mask, &r, simt::resolve_ballot);
  return r.result;
}
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return simt::shfl_as(mask, var, simt::ShflMode::kIdx, static_cast<uint32_t>(src_lane),
                       static_cast<uint32_t>(warpSize - width) << 8 | 31u);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return simt::shfl_as(mask, var, simt::ShflMode::kBfly, static_cast<uint32_t>(lane_mask),
                       static_cast<uint32_t>(warpSize - width) << 8 | 31u);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return simt::shfl_as(mask, var, simt::ShflMode::kUp, delta,
                       static_cast<uint32_t>(warpSize - width) << 8);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return simt::shfl_as(mask, var, simt::ShflMode::kDown, delta,
                       static_cast<uint32_t>(warpSize - width) << 8 | 31u);
}
inline void __threadfence() {}
inline void __threadfence_block() {}
inline size_t __cvta_generic_to_shared(const void* p) {
  return simt::shared_address(p);
}

// ---- Memory access with cache hints: plain accesses on the host -------------------------------
template <class T>
T __ldg(const T* p) {
  return *p;
}
template <class T>
T __ldcg(const T* p) {
  return *p;
}
template <class T>
void __stcg(T* p, T value) {
  *p = value;
}

// ---- Atomics: acquire-release read-modify-writes ---------------------------------------------
// As __threadfence() around an atomic makes it on a GPU (a piece written, a fence, an arrival
// counted; the last arrival's fence, the pieces read): the emulator has no fence of its own to
// order them, so under ThreadSanitizer the atomic orders them.
namespace simt {
template <class T, class F>
T atomic_update(T* p, F f) {
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_acquire);
  while (
      !a.compare_exchange_weak(old, f(old), std::memory_order_acq_rel, std::memory_order_acquire)) {
  }
  return old;
}
}  // namespace simt
template <class T>
T atomicAdd(T* p, T value) {
  return simt::atomic_update(p, [&](T old) { return static_cast<T>(old + value); });
}
template <class T>
T atomicExch(T* p, T value) {
  return simt::atomic_update(p, [&](T) { return value; });
}
template <class T>
T atomicMax(T* p, T value) {
  return simt::atomic_update(p, [&](T old) { return old < value ? value : old; });
}

// ---- Bits and exactly rounded arithmetic -------------------------------------------------------
inline int __popc(unsigned x) {
  return __builtin_popcount(x);
}
inline int __popcll(unsigned long long x) {
  return __builtin_popcountll(x);
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}
inline int __ffsll(long long x) {
  return __builtin_ffsll(x);
}
inline int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x));
}
inline float __int_as_float(int x) {
  return std::bit_cast<float>(x);
}
inline float __uint_as_float(unsigned x) {
  return std::bit_cast<float>(x);
}
inline int __float_as_int(float f) {
  return std::bit_cast<int>(f);
}
inline unsigned __float_as_uint(float f) {
  return std::bit_cast<unsigned>(f);
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fmaf(a, b, c);
}
inline float __fsqrt_rn(float a) {
  return std::sqrt(a);
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __ddiv_rn(double a, double b) {
  return a / b;
}
inline float __double2float_rn(double a) {
  return static_cast<float>(a);
}

// ---- The device math library's names that the host's lacks -----------------------------------
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline float __expf(float x) {
  return std::exp(x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __fdividef(float a, float b) {
  return a / b;
}
inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}
