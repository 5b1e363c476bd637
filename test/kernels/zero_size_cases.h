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
    CHECK_NOTHROW(mse_loss(ctx, empty, empty, empty, 1.0f, empty, empty));
  }
  SECTION("replace_tokens with B = 0") {
    CHECK_NOTHROW(replace_tokens(ctx, ids, positions, slot_weights, samples, replaced, labels));
  }
  SECTION("dropout with N = 0") {
    const DropoutSite site{RngStream{1, RngPurpose::kDropout, 0, 0}, 0, 0.1f};
    CHECK_NOTHROW(dropout_forward(ctx, empty, empty, site));
    CHECK_NOTHROW(dropout_backward(ctx, empty, empty, site));
  }
  SECTION("matmul and bias_grad with M = 0 rows") {
    const Tensor x = arena.alloc<float>({0, 8});
    const Tensor w = arena.alloc<float>({4, 8});
    const Tensor b = arena.alloc<float>({4});
    const Tensor y = arena.alloc<float>({0, 4});
    CHECK_NOTHROW(linear_forward(ctx, x, w, b, y));
    CHECK_NOTHROW(bias_grad(ctx, y, b));
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
    CHECK_NOTHROW(attention_forward(ctx, qkv, mask, args, probs, scratch, out));
    CHECK_NOTHROW(attention_backward(ctx, qkv, mask, args, probs, out, scratch, dqkv, out));
  }
  ctx.synchronize();
}

}  // namespace electra::test
