// replace_tokens: the discriminator's input and labels from the generator's samples (ELECTRA's
// replaced token detection, paper section 2).
//
// Shapes: ids [B, T] i32 (the original tokens), positions [B, N] i32, weights [B, N] f32,
// samples [B * N] i32 -> replaced [B, T] i32, labels [B, T] i32:
//   replaced = ids, then replaced[b, positions[b, k]] = samples[b * N + k] for every slot with
//              weights[b, k] > 0 (empty slots are skipped)
//   labels   = (replaced != ids): 1 = replaced. A sample equal to the original counts as original.
// Positions of weighted slots must lie in [0, T) and be distinct within a sequence (masking draws
// without replacement): the CPU throws UserError naming the slot otherwise; the GPU skips an
// out-of-range slot.
// No backward (no gradient flows through the sampling). No workspace.
#pragma once

#include "kernels/dispatch.h"

namespace electra {

struct ReplaceTokens {
  static constexpr const char* kName = "replace_tokens";
  In ids, positions, weights, samples;
  Out replaced, labels;

  void check() const {
    ELECTRA_CHECK(ids.rank == 2 && positions.rank == 2 && positions.dim(0) == ids.dim(0),
                  "replace_tokens: ids ", ids.str(), " must be [B, T] and positions ",
                  positions.str(), " [B, N]");
    check_dtype(ids, DType::I32, "replace_tokens ids");
    check_dtype(positions, DType::I32, "replace_tokens positions");
    check_same_shape(positions, weights, "replace_tokens weights");
    check_dtype(weights, DType::F32, "replace_tokens weights");
    check_tensor(samples, {positions.numel()}, DType::I32, "replace_tokens samples");
    check_same_shape(ids, replaced, "replace_tokens replaced");
    check_dtype(replaced, DType::I32, "replace_tokens replaced");
    check_same_shape(ids, labels, "replace_tokens labels");
    check_dtype(labels, DType::I32, "replace_tokens labels");
    if (ids.empty()) return;
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
