// How every op binds device and dtype (the pattern each kernels/<op>.h follows):
//
//   namespace electra {
//   namespace cpu  { void op(Context&, args...); }   // <op>_cpu.cpp, templated on float/double
//   namespace cuda { void op(Context&, args...); }   // <op>.cu, f32/bf16 in, f32 accumulation
//   inline void op(Context& ctx, args...) {
//     check_devices(ctx, "op", {tensors...});
//     ELECTRA_DISPATCH(ctx, op, args...);
//   }
//   }
//
// In a CPU-only build the cuda:: symbols do not exist; ELECTRA_DISPATCH then throws for a CUDA
// context instead of referencing them.
#pragma once

#include <initializer_list>

#include "engine/context.h"
#include "engine/error.h"
#include "engine/tensor.h"

namespace electra {

[[noreturn]] inline void throw_built_without_cuda(const char* op) {
  throw Error(str_cat(op, ": CUDA context in a build without CUDA (ELECTRA_CUDA=OFF)"));
}

// Throws Error naming the op and the tensor unless every tensor lives on the context's device.
inline void check_devices(const Context& ctx, const char* op,
                          std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    ELECTRA_CHECK(t->device == ctx.device(), op, ": tensor ", t->str(), " is not on ",
                  device_name(ctx.device()));
  }
}

// Calls f(T{}) with T = float for F32 and T = double for F64; throws for other dtypes. The CPU
// references use it to instantiate their float/double templates.
template <class F>
void dispatch_cpu_float(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::F32:
      f(float{});
      return;
    case DType::F64:
      f(double{});
      return;
    default:
      throw Error(str_cat(op, ": the CPU reference takes f32 or f64, got ", dtype_name(dtype)));
  }
}

}  // namespace electra

#if ELECTRA_WITH_CUDA
#define ELECTRA_DISPATCH(ctx, op, ...)       \
  do {                                       \
    if ((ctx).is_cuda()) {                   \
      ::electra::cuda::op(ctx, __VA_ARGS__); \
    } else {                                 \
      ::electra::cpu::op(ctx, __VA_ARGS__);  \
    }                                        \
  } while (0)
#else
#define ELECTRA_DISPATCH(ctx, op, ...)          \
  do {                                          \
    if ((ctx).is_cuda()) {                      \
      ::electra::throw_built_without_cuda(#op); \
    } else {                                    \
      ::electra::cpu::op(ctx, __VA_ARGS__);     \
    }                                           \
  } while (0)
#endif
