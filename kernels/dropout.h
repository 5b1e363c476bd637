// dropout: y = x * keep_i / (1 - p), i the flat element index, keep_i = dropout_keep(stream,
// site_offset + i, p) from kernels/dropout_mask.h (true when uniform01 >= p).
//
// Shapes: x, y (and dy, dx) have the same element count, any shape.
// Dtypes: all f32 or all f64 on the CPU; f32 or bf16 on the GPU (x and y the same dtype).
// The survivor scale is computed once in f32, scale = 1 / (1 - p), and applied as x * scale (one
// rounding, so CPU f32 and GPU f32 agree bit for bit); in f64 it is 1 / (1 - double(p)).
// Saves nothing: the backward regenerates the mask from (stream, site_offset + i), so
// dx = dy * keep_i * scale (written, =).
// p = 0 is the identity (y = x); p must lie in [0, 1): p = 1 would scale by infinity.
#pragma once

#include <cstdint>

#include "kernels/dispatch.h"
#include "kernels/dropout_mask.h"

namespace electra {

// What one dropout site needs: the step's stream, dropout_site_offset(site) and the drop
// probability.
struct DropoutSite {
  RngStream stream;
  uint64_t offset = 0;
  float p = 0;
};

namespace cpu {
void dropout_forward(Context& ctx, const Tensor& x, const Tensor& y, const DropoutSite& site);
void dropout_backward(Context& ctx, const Tensor& dy, const Tensor& dx, const DropoutSite& site);
}  // namespace cpu
namespace cuda {
void dropout_forward(Context& ctx, const Tensor& x, const Tensor& y, const DropoutSite& site);
void dropout_backward(Context& ctx, const Tensor& dy, const Tensor& dx, const DropoutSite& site);
}  // namespace cuda

// Throws Error unless 0 <= p < 1.
inline void check_dropout_p(float p, const char* op) {
  ELECTRA_CHECK(p >= 0.0f && p < 1.0f, op, ": dropout probability must be in [0, 1), got ", p);
}

inline void dropout_forward(Context& ctx, const Tensor& x, const Tensor& y,
                            const DropoutSite& site) {
  check_devices(ctx, "dropout_forward", {&x, &y});
  check_dropout_p(site.p, "dropout_forward");
  ELECTRA_CHECK(x.numel() == y.numel() && x.dtype == y.dtype, "dropout_forward: x ", x.str(),
                ", y ", y.str());
  ELECTRA_DISPATCH(ctx, dropout_forward, x, y, site);
}

inline void dropout_backward(Context& ctx, const Tensor& dy, const Tensor& dx,
                             const DropoutSite& site) {
  check_devices(ctx, "dropout_backward", {&dy, &dx});
  check_dropout_p(site.p, "dropout_backward");
  ELECTRA_CHECK(dy.numel() == dx.numel() && dy.dtype == dx.dtype, "dropout_backward: dy ", dy.str(),
                ", dx ", dx.str());
  ELECTRA_DISPATCH(ctx, dropout_backward, dy, dx, site);
}

}  // namespace electra
