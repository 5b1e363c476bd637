// gather: the rows of the masked positions (ELECTRA's generator head runs only there).
//
// Forward:  out[b * K + k, :] = x[b, positions[b, k], :]                         (written, =)
// Backward: dx[b, positions[b, k], :] += dout[b * K + k, :] for every (b, k)     (accumulated, +=)
//           with accumulate = false: dx starts from 0 (every row written, those no slot points
//           at as 0), the same bits as zeroing dx first, without the memset (the generator's
//           head writes its encoder's whole output gradient this way)
// Positions may repeat within a sequence (padding slots all point at position 0 with weight 0);
// repeated slots accumulate in slot order k = 0, 1, ... (the GPU runs one thread per (slot,
// column group); the first slot of a repeated position adds the others' rows in slot order, so
// dx is deterministic without atomics; with accumulate = false, one thread per (row, column
// group) adds the slots that point at its row, in slot order, from 0).
// Shapes: x, dx [B, T, H]; positions i32 [B, K]; out, dout [B * K, H].
// Dtypes: CPU all f32 or all f64; GPU f32 or bf16 (x, out, dout, dx the same), f32 arithmetic.
// Out-of-range positions (< 0 or >= T): the CPU throws UserError naming (b, k) and the value; the
// GPU forward writes a row of NaN for that slot and the backward skips it.
#pragma once

#include "kernels/dispatch.h"

namespace electra {

inline void check_gather_shapes(const char* op, const Tensor& x, const Tensor& positions,
                                const Tensor& out) {
  ELECTRA_CHECK(x.rank == 3, op, ": x must be [B, T, H], got ", x.str());
  check_dtype(positions, DType::I32, op);
  ELECTRA_CHECK(positions.rank == 2 && positions.dim(0) == x.dim(0), op, ": positions ",
                positions.str(), " must be [B, K] for x ", x.str());
  check_shape(out, {x.dim(0) * positions.dim(1), x.dim(2)}, op);
  ELECTRA_CHECK(out.dtype == x.dtype, op, ": dtypes differ: ", x.str(), " vs ", out.str());
}

struct GatherForward {
  static constexpr const char* kName = "gather_forward";
  In x, positions;
  Out out;

  void check() const { check_gather_shapes(kName, x, positions, out); }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct GatherBackward {
  static constexpr const char* kName = "gather_backward";
  In dout, positions;
  Out dx;
  bool accumulate = true;

  void check() const { check_gather_shapes(kName, dx, positions, dout); }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
