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

  void check() const {
    ELECTRA_CHECK(in.numel() == out.numel(), "cast: ", in.str(), " -> ", out.str());
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
