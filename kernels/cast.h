// cast: elementwise dtype conversion, out[i] = convert(in[i]).
//
// Shapes: in and out have the same element count (any shape).
// Pairs: f32 -> bf16 (round to nearest even, NaN stays NaN), bf16 -> f32 (exact) on CPU and CUDA;
// f32 <-> f64 on the CPU (gradient checks). No backward: a cast's gradient is the reverse cast.
#pragma once

#include "kernels/dispatch.h"

namespace electra {

namespace cpu {
void cast(Context& ctx, const Tensor& in, const Tensor& out);
}
namespace cuda {
void cast(Context& ctx, const Tensor& in, const Tensor& out);
}

inline void cast(Context& ctx, const Tensor& in, const Tensor& out) {
  check_devices(ctx, "cast", {&in, &out});
  ELECTRA_CHECK(in.numel() == out.numel(), "cast: ", in.str(), " -> ", out.str());
  ELECTRA_DISPATCH(ctx, cast, in, out);
}

}  // namespace electra
