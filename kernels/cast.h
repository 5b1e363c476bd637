// cast: elementwise dtype conversion, out[i] = convert(in[i]).
//
// Shapes: in and out have the same element count (any shape).
// Pairs: f32 -> bf16 (round to nearest even, NaN stays NaN), bf16 -> f32 (exact) on CPU and CUDA;
// f32 <-> f64 on the CPU (gradient checks). No backward: a cast's gradient is the reverse cast.
#pragma once

#include "kernels/dispatch.h"

namespace electra {

struct Cast {
  static constexpr const char* kName = "cast";
  In in;
  Out out;

  void check(const Context& ctx) const {
    ELECTRA_CHECK(in.numel() == out.numel(), "cast: ", in.str(), " -> ", out.str());
    auto is = [&](DType from, DType to) { return in.dtype == from && out.dtype == to; };
    const bool pair =
        is(DType::F32, DType::BF16) || is(DType::BF16, DType::F32) ||
        (!ctx.is_cuda() && (is(DType::F32, DType::F64) || is(DType::F64, DType::F32)));
    ELECTRA_CHECK(pair, "cast", ctx.is_cuda() ? " (cuda)" : "", ": unsupported pair ", in.str(),
                  " -> ", out.str());
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
