// Ops called with zero elements (an empty batch: B = 0, or M = 0 rows) on any device: each must
// return without touching memory and, on the GPU, without launching (a 0-block grid is an invalid
// launch configuration, which ELECTRA_CUDA_CHECK_LAUNCH reports). Shared by the CPU unit test and
// the GPU test.
#pragma once

#include <catch2/catch.hpp>

#include "engine/arena.h"
#include "engine/context.h"
#include "kernels/attention.h"
#include "kernels/dropout.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/mse_loss.h"
#include "kernels/replace_tokens.h"

namespace electra::test {

inline void check_zero_size_ops(Context& ctx) {
  Arena arena("zero_size", ctx.device(), size_t{1} << 20);
  const Tensor empty = arena.alloc<float>({0});
  const Tensor ids = arena.alloc(DType::I32, {0, 16});
  const Tensor positions = arena.alloc(DType::I32, {0, 4});
  const Tensor slot_weights = arena.alloc<float>({0, 4});
  const Tensor samples = arena.alloc(DType::I32, {0});
  const Tensor replaced = arena.alloc(DType::I32, {0, 16});
  const Tensor labels = arena.alloc(DType::I32, {0, 16});

  SECTION("mse_loss with N = 0") {
    CHECK_NOTHROW(run_op(ctx, MseLoss{.predictions = empty,
                                      .targets = empty,
                                      .weights = empty,
                                      .scale = 1.0f,
                                      .loss = Out(empty),
                                      .dpredictions = Out(empty)}));
  }
  SECTION("replace_tokens with B = 0") {
    CHECK_NOTHROW(run_op(ctx, ReplaceTokens{.ids = ids,
                                            .positions = positions,
                                            .weights = slot_weights,
                                            .samples = samples,
                                            .replaced = Out(replaced),
                                            .labels = Out(labels)}));
  }
  SECTION("dropout with N = 0") {
    const DropoutSite site{RngStream{1, RngPurpose::kDropout, 0, 0}, 0, 0.1f};
    CHECK_NOTHROW(run_op(ctx, Dropout{.x = empty, .site = site, .y = Out(empty)}));
  }
  SECTION("matmul and bias_grad with M = 0 rows") {
    const Tensor x = arena.alloc<float>({0, 8});
    const Tensor w = arena.alloc<float>({4, 8});
    const Tensor b = arena.alloc<float>({4});
    const Tensor y = arena.alloc<float>({0, 4});
    CHECK_NOTHROW(linear_forward(ctx, x, w, b, y));
    CHECK_NOTHROW(run_op(ctx, BiasGrad{.dy = y, .db = Out(b)}));
  }
  SECTION("bias-GELU and layernorm backward with N = 0 rows") {
    const Tensor x = arena.alloc<float>({0, 8});
    const Tensor stats = arena.alloc<float>({0});
    const Tensor b = arena.alloc<float>({8});
    const Tensor db = arena.alloc<float>({8});
    const Tensor workspace = arena.alloc<float>({1});
    CHECK_NOTHROW(run_op(
        ctx,
        BiasGeluBackward{
            .dy = x, .x = x, .b = b, .dx = Out(x), .db = Out(db), .workspace = Out(workspace)}));
    CHECK_NOTHROW(run_op(
        ctx, BiasGeluBackwardPreact{
                 .dy = x, .u = x, .dx = Out(x), .db = Out(db), .workspace = Out(workspace)}));
    CHECK_NOTHROW(run_op(ctx, LayerNormBackward{.dy = x,
                                                .x = x,
                                                .gamma = b,
                                                .mean = stats,
                                                .rstd = stats,
                                                .dx = Out(x),
                                                .dgamma = Out(db),
                                                .dbeta = Out(db),
                                                .workspace = Out(workspace)}));
    const DropoutSite site{RngStream{1, RngPurpose::kDropout, 0, 0}, 0, 0.1f};
    CHECK_NOTHROW(run_op(ctx, ResidualLayerNormBackward{.dy = x,
                                                        .sum = x,
                                                        .gamma = b,
                                                        .mean = stats,
                                                        .rstd = stats,
                                                        .site = site,
                                                        .dx = Out(x),
                                                        .dresidual = Out(x),
                                                        .dgamma = Out(db),
                                                        .dbeta = Out(db),
                                                        .workspace = Out(workspace)}));
  }
  SECTION("attention forward and backward with B = 0") {
    AttentionArgs args{2, 0.1f, RngStream{1, RngPurpose::kDropout, 0, 0}, 0};
    args.impl = AttentionImpl::kUnfused;
    const Tensor qkv = arena.alloc<float>({0, 16, 24});
    const Tensor mask = arena.alloc(DType::I32, {0, 16});
    const Tensor probs = arena.alloc<float>({0, 2, 16, 16});
    const Tensor scratch = arena.alloc<float>({0, 2, 16, 16});
    const Tensor out = arena.alloc<float>({0, 16, 8});
    const Tensor dqkv = arena.alloc<float>({0, 16, 24});
    CHECK_NOTHROW(run_op(ctx, AttentionForward{.qkv = qkv,
                                               .mask = mask,
                                               .args = args,
                                               .saved = Out(probs),
                                               .scratch = Out(scratch),
                                               .out = Out(out)}));
    CHECK_NOTHROW(run_op(ctx, AttentionBackward{.qkv = qkv,
                                                .mask = mask,
                                                .args = args,
                                                .saved = probs,
                                                .dout = out,
                                                .scratch = Out(scratch),
                                                .dqkv = Out(dqkv),
                                                .out = out}));
  }
  ctx.synchronize();
}

}  // namespace electra::test
