// How every op binds device and dtype (the pattern each kernels/<op>.h follows):
//
//   struct LayerNormForward {                 // the op: its arguments, declared once
//     static constexpr const char* kName = "layernorm_forward";
//     In x, gamma, beta;                      // read
//     float eps = 0;
//     Out y, mean, rstd;                      // written (=) or accumulated (+=), as documented
//     void check() const;                     // shapes and dtypes, in the header
//     void cpu(Context& ctx) const;           // <op>_cpu.cpp, templated on float/double
//     void cuda(Context& ctx) const;          // <op>.cu, f32/bf16 in, f32 accumulation
//   };
//   run_op(ctx, LayerNormForward{.x = x, .gamma = g, .beta = b, .eps = 1e-12f,
//                             .y = Out(y), .mean = Out(mean), .rstd = Out(rstd)});
//
// Outputs are their own type: Out has an explicit constructor, so a tensor reaches an output
// field only through Out(t), written at the call site, and a tensor put in an output's place by
// mistake does not compile. Inputs are In, whose ptr<T>() gives const T*: an op cannot write what
// it only reads. Neither has a default: a field left out does not compile either. Call sites name
// every field (designated initialisers), so the compiler checks each name and the order.
//
// run_op first checks that every tensor among the op's fields (In, Out, and those of a struct
// field; not one behind a pointer) is on the context's device: kernels/op_fields.h finds the
// fields, so no op lists them and none can be forgotten. Then it calls check(); an op whose
// checks depend on the device (a workspace only the GPU uses) declares check(const Context&)
// instead.
// In a CPU-only build the cuda() members are not defined; run_op() then throws for a CUDA context
// instead of referencing them.
#pragma once

#include <initializer_list>
#include <tuple>
#include <type_traits>

#include "engine/context.h"
#include "engine/error.h"
#include "engine/tensor.h"
#include "kernels/op_fields.h"

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

// An op's input: a view the op only reads.
struct In : Tensor {
  In(const Tensor& t)
      : Tensor(t) {}  // NOLINT(google-explicit-constructor): inputs read as `.x = x`
  template <class T>
  const T* ptr() const {
    return Tensor::ptr<T>();
  }
};

// An op's output: a view the op writes (=) or accumulates into (+=), as its contract says.
struct Out : Tensor {
  explicit Out(const Tensor& t) : Tensor(t) {}
};

// Throws Error naming op unless `field`, when it is a tensor holding data, lives on ctx's device,
// or, when it is a struct (an op, or a group of its arguments such as Gemm's matrices), every
// tensor among its fields does. A tensor left unset (Tensor{}, data == nullptr: an optional
// output, a workspace that the CPU does not use) holds nothing and is passed over; the op's
// check() says whether it may be unset.
template <class Field>
void check_field_devices(const Context& ctx, const char* op, const Field& field) {
  if constexpr (std::is_base_of_v<Tensor, Field>) {
    if (field.data != nullptr) check_devices(ctx, op, {&field});
  } else if constexpr (std::is_class_v<Field> && std::is_aggregate_v<Field>) {
    std::apply([&](const auto&... f) { (check_field_devices(ctx, op, f), ...); },
               detail::fields_of(field));
  }
}

// Checks op's arguments, then runs it on ctx's device.
template <class Op>
void run_op(Context& ctx, const Op& op) {
  check_field_devices(ctx, Op::kName, op);
  if constexpr (requires { op.check(ctx); }) {
    op.check(ctx);
  } else {
    op.check();
  }
  if (ctx.is_cuda()) {
#if ELECTRA_WITH_CUDA
    op.cuda(ctx);
#else
    throw_built_without_cuda(Op::kName);
#endif
  } else {
    op.cpu(ctx);
  }
}

}  // namespace electra
