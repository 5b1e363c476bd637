// disc_head: the discriminator's sigmoid loss ("was this token replaced?") with its gradient and
// the counts behind accuracy, precision and recall.
//
// Shapes: logits [N], labels [N] i32 (1 = replaced, 0 = original), weights [N] f32 (0 on padding),
// loss [N], dlogits [N] (may alias logits: each element is read before it is written),
// counts [kDiscCounts]. With z = logits[i], y = labels[i], w = weights[i], s = sigmoid(z):
//   loss[i]    = w * BCE(s, y) = w * (max(z, 0) - y z + log1p(exp(-|z|)))   (softplus form: stable)
//   dlogits[i] = w * scale * (s - y)   (scale: a value, or device memory read once)
// s - y is computed without cancellation from e = exp(-|z|) (which the loss uses too):
//   s - y = sigmoid(z) = 1 / (1 + e) or e / (1 + e) when y = 0 (z > 0 or not),
//   s - y = -sigmoid(-z) = -e / (1 + e) or -1 / (1 + e) when y = 1,
// a few ulps from the exact value in any precision, where 1 / (1 + exp(-z)) - 1 for y = 1 and
// large z subtracts two numbers near 1 (f32: 3e-5 relative error on the CPU, 4.8e-5 on an H100;
// test/kernels/bf16_emulation_test.cpp). No overflow: e <= 1.
// A prediction is "replaced" when z > 0. The counts are sums over all tokens of w times an
// indicator (see DiscCount), and the summed loss; precision = TP / predicted positives, recall =
// TP / actual positives, accuracy = correct / total weight are left to the caller.
//
// Dtypes: CUDA logits/dlogits f32 or bf16, loss and counts f32 (f32 math). CPU logits, dlogits,
// loss and counts f32 or f64. The CUDA counts are a deterministic two-pass reduction in one
// launch: per-block partials into `workspace` (f32, at least disc_head_workspace_size(N)
// elements), then the block that finishes last sums them in a fixed order. The CPU ignores the
// workspace (pass an empty Tensor).
#pragma once

#include "engine/device_scalar.h"
#include "kernels/dispatch.h"

namespace electra {

enum DiscCount : int {
  kDiscCorrect = 0,            // sum w * [(z > 0) == (y == 1)]
  kDiscTruePositive = 1,       // sum w * [z > 0 and y == 1]
  kDiscPredictedPositive = 2,  // sum w * [z > 0]
  kDiscActualPositive = 3,     // sum w * [y == 1]
  kDiscWeight = 4,             // sum w
  kDiscLoss = 5,               // sum loss[i] (unscaled)
  kDiscCounts = 6,
};

// Threads per block and elements per thread of the CUDA kernel: the partial count is fixed by N
// alone, so the reduction order (and the result) does not depend on the GPU.
constexpr int kDiscHeadThreads = 256;
constexpr int kDiscHeadItemsPerThread = 8;

// Elements of f32 workspace the CUDA op needs for N tokens: kDiscCounts partials per block.
inline int64_t disc_head_workspace_size(int64_t n) {
  const int64_t per_block = int64_t{kDiscHeadThreads} * kDiscHeadItemsPerThread;
  return ((n + per_block - 1) / per_block) * kDiscCounts;
}

struct DiscHead {
  static constexpr const char* kName = "disc_head";
  In logits, labels, weights;
  DeviceScalar<float> scale;
  Out loss, dlogits, counts, workspace;

  void check(const Context& ctx) const {
    const int64_t n = logits.numel();
    ELECTRA_CHECK(n > 0, "disc_head: no tokens in ", logits.str());
    ELECTRA_CHECK(
        labels.numel() == n && weights.numel() == n && loss.numel() == n && dlogits.numel() == n,
        "disc_head: logits ", logits.str(), ", labels ", labels.str(), ", weights ", weights.str(),
        ", loss ", loss.str(), ", dlogits ", dlogits.str());
    check_dtype(labels, DType::I32, "disc_head labels");
    check_dtype(weights, DType::F32, "disc_head weights");
    check_float_dtypes(kName, {logits, dlogits}, {loss, counts});
    check_shape(counts, {kDiscCounts}, "disc_head counts");
    if (ctx.is_cuda()) {
      check_dtype(workspace, DType::F32, "disc_head workspace");
      ELECTRA_CHECK(workspace.numel() >= disc_head_workspace_size(n), "disc_head: workspace ",
                    workspace.str(), " < ", disc_head_workspace_size(n), " floats");
    }
  }
  // The per-block loss and counts, summed by the last block to finish (disc_head.cu).
  Launches launches() const { return {.kernels = 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
