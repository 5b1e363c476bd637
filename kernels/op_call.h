// What run_op tells an observer about an op call (engine/op_observer.h): its name, its launches
// on a GPU, its FLOPs and bytes, and a label. Each is an optional member of the op, found with a
// requires-expression:
//
//   Launches launches() const;   what its cuda() member launches. Declared by every op whose
//                                CUDA member launches more than one kernel, calls cuBLASLt, or
//                                launches a number that depends on its arguments; absent, one
//                                kernel. It reads the op's arguments only, never the context,
//                                so a CPU run counts exactly what a GPU would launch
//                                (engine/launch_counter.h); launch_count_gpu_test records every
//                                op call of an update in its own CUDA graph and compares the
//                                graph's nodes with the declaration.
//                                Ops with nothing to do (an empty tensor) may launch less.
//   double flops() const;        the op's arithmetic, for ops that are compute-bound (GEMMs,
//                                attention); absent, none is stated.
//   double bytes() const;        the bytes the op must move at least; absent, the bytes of every
//                                tensor among its fields (each read or written once).
//   std::string label() const;   what tells its calls apart in a profile (a GEMM's shape).
#pragma once

#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>

#include "engine/op_observer.h"
#include "engine/tensor.h"
#include "kernels/op_fields.h"

namespace electra {

// Calls f(tensor) for `field` when it is a tensor, or for every tensor among its fields when it
// is a struct (an op, or a group of its arguments such as Gemm's matrices; not one behind a
// pointer): kernels/op_fields.h finds the fields.
template <class Field, class F>
void for_each_tensor(const Field& field, F&& f) {
  if constexpr (std::is_base_of_v<Tensor, Field>) {
    f(static_cast<const Tensor&>(field));
  } else if constexpr (std::is_class_v<Field> && std::is_aggregate_v<Field>) {
    std::apply([&](const auto&... fields) { (for_each_tensor(fields, f), ...); },
               detail::fields_of(field));
  }
}

template <class Op>
Launches launches_of(const Op& op) {
  if constexpr (requires { op.launches(); }) {
    return op.launches();
  } else {
    return Launches{.kernels = 1};
  }
}

template <class Op>
OpCall describe_op(const Op& op) {
  OpCall call;
  call.name = Op::kName;
  call.op = &op;
  call.launches = launches_of(op);
  call.part = current_model_part();
  if constexpr (requires { op.flops(); }) call.flops = op.flops();
  if constexpr (requires { op.bytes(); }) {
    call.bytes = op.bytes();
  } else {
    for_each_tensor(op, [&](const Tensor& t) {
      if (t.data != nullptr) call.bytes += static_cast<double>(t.nbytes());
    });
  }
  if constexpr (requires { op.label(); }) call.label = op.label();
  return call;
}

// The op of `call` when it is an Op (by name), else null.
template <class Op>
const Op* op_of(const OpCall& call) {
  return std::strcmp(call.name, Op::kName) == 0 ? static_cast<const Op*>(call.op) : nullptr;
}

}  // namespace electra
