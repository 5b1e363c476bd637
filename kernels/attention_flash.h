// attention, version 2: FlashAttention-2 style fused kernels that never hold anything of size T^2
// in memory (contract and math: kernels/attention.h): bf16 with every accumulator in registers
// (kernels/attention_flash_bf16.cu), f32 by FMA loops over shared-memory tiles
// (kernels/attention_flash.cu, which holds these entry points but the last).
//
// qkv [B, T, 3H], mask [B, T] i32, out / dout [B, T, H], dqkv [B, T, 3H], all f32 or all bf16;
//   lse [B, heads, T] f32: L_i = max_k S_ik + log sum_k exp(S_ik - max_k S_ik) over real keys
//                          (+inf for a row with no real key), written by the forward;
//   keep: bf16, the keep bits the forward saves at p > 0 and the backward reads (attention.h);
//         f32, unset (those kernels draw the bits both ways).
// The backward needs no workspace: each of its blocks computes the D_i = <dout_i, out_i> it
// reads. With `ds` (kFlashDsGemm) it runs only its dK, dV blocks, which also write
//   ds [B, heads, T, T] in qkv's dtype: dS_ij = P_ij (dP_ij - D_i) at [b, head, j, i] (dS^T,
//   key-major), before the 1 / sqrt(d) scale (0 for padded keys), the values their dK product
//   multiplies,
// and leaves dQ (dqkv's first H columns) to the caller: dQ = ds^T K / sqrt(d).
// flash_attention_forward_short and flash_attention_backward_short (kFlashShort,
// kernels/attention_flash_short.cu) compute the same out and lse, and the same dqkv, with one block
// per (b, head), bf16 only, for T <= 128 and head dim 64 exactly (attention_uses_short); they need
// no workspace either.
// Only for the shapes attention_uses_flash() accepts (T <= 512, head dim <= 128); the callers
// are attention_forward / attention_backward (kernels/attention.cu), which check every shape.
#pragma once

#include "kernels/attention.h"

namespace electra::cuda {

void flash_attention_forward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                             const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                             const Tensor& keep);
void flash_attention_backward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                              const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                              const Tensor& dout, const Tensor& keep, const Tensor& dqkv,
                              const Tensor* ds);
void flash_attention_forward_short(Context& ctx, const Tensor& qkv, const Tensor& mask,
                                   const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                                   const Tensor& keep);
void flash_attention_backward_short(Context& ctx, const Tensor& qkv, const Tensor& mask,
                                    const AttentionArgs& args, const Tensor& lse, const Tensor& out,
                                    const Tensor& dout, const Tensor& keep, const Tensor& dqkv);

}  // namespace electra::cuda
