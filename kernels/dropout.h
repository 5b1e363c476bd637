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

// Throws Error unless 0 <= p < 1.
inline void check_dropout_p(float p, const char* op) {
  ELECTRA_CHECK(p >= 0.0f && p < 1.0f, op, ": dropout probability must be in [0, 1), got ", p);
}

// Throws Error naming op unless a and b have the same element count and dtype.
inline void check_dropout_pair(const char* op, const Tensor& a, const Tensor& b) {
  ELECTRA_CHECK(a.numel() == b.numel() && a.dtype == b.dtype, op, ": ", a.str(), " and ", b.str(),
                " differ in size or dtype");
}

struct DropoutForward {
  static constexpr const char* kName = "dropout_forward";
  In x;
  DropoutSite site;
  Out y;

  void check(const Context& ctx) const {
    check_devices(ctx, kName, {&x, &y});
    check_dropout_p(site.p, kName);
    check_dropout_pair(kName, x, y);
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct DropoutBackward {
  static constexpr const char* kName = "dropout_backward";
  In dy;
  DropoutSite site;
  Out dx;

  void check(const Context& ctx) const {
    check_devices(ctx, kName, {&dy, &dx});
    check_dropout_p(site.p, kName);
    check_dropout_pair(kName, dy, dx);
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
