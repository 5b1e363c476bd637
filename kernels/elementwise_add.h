// elementwise_add: out[i] = a[i] + b[i] (one rounding, IEEE round to nearest even), so the CPU
// and the GPU give the same bits.
//
// Shapes: a, b and out have the same element count (any shape) and the same dtype: f32, or f64
// (gradient checks). out may be a or b. No backward: the caller routes the gradient (the
// discriminator's tables of sharing: gdes, models/embeddings.h, take dout into the residual only).
#pragma once

#include "kernels/dispatch.h"

namespace electra {

struct ElementwiseAdd {
  static constexpr const char* kName = "elementwise_add";
  In a, b;
  Out out;

  void check() const {
    ELECTRA_CHECK(a.numel() == out.numel() && b.numel() == out.numel() && a.dtype == out.dtype &&
                      b.dtype == out.dtype,
                  "elementwise_add: ", a.str(), " + ", b.str(), " -> ", out.str());
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
