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
// With an observer installed (engine/op_observer.h: the profiler, the launch counter) run_op
// describes each call to it (kernels/op_call.h: launches(), flops(), bytes(), label(), optional
// members of the op) and the observer may time it or count it without running it; without one
// the cost is a branch on a null thread-local pointer.
// In a CPU-only build the cuda() members are not defined; run_op() then throws for a CUDA context
// instead of referencing them.
#pragma once

#include <initializer_list>
#include <tuple>
#include <type_traits>

#include "engine/context.h"
#include "engine/error.h"
#include "engine/tensor.h"
#include "kernels/op_call.h"

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

// Throws Error naming op unless every tensor among `field` that holds data lives on ctx's
// device. A tensor left unset (Tensor{}, data == nullptr: an optional output, a workspace that the
// CPU does not use) holds nothing and is passed over; the op's check() says whether it may be
// unset.
template <class Field>
void check_field_devices(const Context& ctx, const char* op, const Field& field) {
  for_each_tensor(field, [&](const Tensor& t) {
    if (t.data != nullptr) check_devices(ctx, op, {&t});
  });
}

namespace detail {

template <class Op>
void run_on_device(Context& ctx, const Op& op) {
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

// run_op under an observer (engine/op_observer.h): the ops this one calls itself belong to it.
template <class Op>
void run_observed(Context& ctx, const Op& op, OpObserver& observer) {
  const OpCall call = describe_op(op);
  if (!observer.before(ctx, call)) return;
  {
    const ObserveOps inside(nullptr);
    run_on_device(ctx, op);
  }
  observer.after(ctx, call);
}

}  // namespace detail

// Checks op's arguments, then runs it on ctx's device.
template <class Op>
void run_op(Context& ctx, const Op& op) {
  check_field_devices(ctx, Op::kName, op);
  if constexpr (requires { op.check(ctx); }) {
    op.check(ctx);
  } else {
    op.check();
  }
  if (OpObserver* observer = op_observer(); observer != nullptr) [[unlikely]] {
    detail::run_observed(ctx, op, *observer);
  } else {
    detail::run_on_device(ctx, op);
  }
}

}  // namespace electra
