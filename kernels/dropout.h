// dropout: y = x * keep_i / (1 - p), i the flat element index, keep_i = dropout_keep(stream,
// site_offset + i, p) from kernels/dropout_mask.h (true when uniform01 >= p).
//
// The backward is the same op: dx = dy * keep_i / (1 - p) is Dropout applied to dy with the
// forward's site, which regenerates the same mask from (stream, site_offset + i). So the forward
// saves nothing, and y (dx) is written (=).
// Shapes: x and y have the same element count, any shape.
// Dtypes: all f32 or all f64 on the CPU; f32 or bf16 on the GPU (x and y the same dtype).
// The survivor scale is computed once in f32, scale = 1 / (1 - p), and applied as x * scale (one
// rounding, so CPU f32 and GPU f32 agree bit for bit); in f64 it is 1 / (1 - double(p)).
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

struct Dropout {
  static constexpr const char* kName = "dropout";
  In x;
  DropoutSite site;
  Out y;

  void check() const {
    check_dropout_p(site.p, kName);
    ELECTRA_CHECK(x.numel() == y.numel() && x.dtype == y.dtype, kName, ": ", x.str(), " and ",
                  y.str(), " differ in size or dtype");
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
