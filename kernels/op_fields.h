// fields_of(op): the fields of an op struct as a tuple of const references, in declaration order,
// so that run_op checks every In and Out tensor of an op without the op listing them
// (kernels/dispatch.h).
//
// C++20 has no reflection: the fields are counted by brace-initialising the op from N values of a
// type that converts to anything (the largest N that compiles is the field count, since aggregate
// initialisation refuses one value more), then named by a structured binding of that many names.
// An op with more than kMaxOpFields fields, some without a default, compiles from no count at all;
// that is a compile error here, never a count of 0 (which would let run_op check none of its
// tensors).
// A structured binding cannot be a pack before C++26, hence one case per count. A miscount does
// not compile (the binding must name every field exactly), nor does an op that is not an
// aggregate.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace electra::detail {

// Converts to any type. Only named in unevaluated brace-initialisations.
struct AnyField {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor)
};

template <class Op, size_t... I>
constexpr bool brace_initialisable_from(std::index_sequence<I...>) {
  return requires {
    Op{(static_cast<void>(I), AnyField{})...};
  };
}

inline constexpr size_t kMaxOpFields = 16;

// What field_count returns when no count from 0 to kMaxOpFields + 1 initialises Op.
inline constexpr size_t kUncountedFields = static_cast<size_t>(-1);

template <class Op, size_t N = kMaxOpFields + 1>
constexpr size_t field_count() {
  if constexpr (brace_initialisable_from<Op>(std::make_index_sequence<N>{})) {
    return N;
  } else if constexpr (N == 0) {
    return kUncountedFields;
  } else {
    return field_count<Op, N - 1>();
  }
}

template <class Op>
auto fields_of(const Op& op) {
  static_assert(std::is_aggregate_v<Op>, "an op is an aggregate of its named fields");
  constexpr size_t n = field_count<Op>();
  static_assert(
      n != kUncountedFields,
      "fields_of: the op has more fields than kMaxOpFields; raise it and add a case below");
  static_assert(n <= kMaxOpFields, "fields_of: raise kMaxOpFields and add a case below");
  if constexpr (n == 0) {
    return std::tuple<>();
  } else if constexpr (n == 1) {
    const auto& [f1] = op;
    return std::tie(f1);
  } else if constexpr (n == 2) {
    const auto& [f1, f2] = op;
    return std::tie(f1, f2);
  } else if constexpr (n == 3) {
    const auto& [f1, f2, f3] = op;
    return std::tie(f1, f2, f3);
  } else if constexpr (n == 4) {
    const auto& [f1, f2, f3, f4] = op;
    return std::tie(f1, f2, f3, f4);
  } else if constexpr (n == 5) {
    const auto& [f1, f2, f3, f4, f5] = op;
    return std::tie(f1, f2, f3, f4, f5);
  } else if constexpr (n == 6) {
    const auto& [f1, f2, f3, f4, f5, f6] = op;
    return std::tie(f1, f2, f3, f4, f5, f6);
  } else if constexpr (n == 7) {
    const auto& [f1, f2, f3, f4, f5, f6, f7] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7);
  } else if constexpr (n == 8) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8);
  } else if constexpr (n == 9) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9);
  } else if constexpr (n == 10) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9, f10] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10);
  } else if constexpr (n == 11) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11);
  } else if constexpr (n == 12) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12);
  } else if constexpr (n == 13) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13);
  } else if constexpr (n == 14) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14);
  } else if constexpr (n == 15) {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15);
  } else {
    const auto& [f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16] = op;
    return std::tie(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16);
  }
}

}  // namespace electra::detail
