// attention: the BERT self-attention core (after the QKV projection, before the output one).
//
// Shapes: qkv [B, T, 3H] packed as Q = qkv[..., 0:H], K = qkv[..., H:2H], V = qkv[..., 2H:3H];
// head h uses columns h*d .. (h+1)*d of each, d = H / heads. mask [B, T] i32: 1 = real token,
// 0 = padding. out [B, T, H] (heads concatenated).
//
// Forward, for each batch b, head h, query i and key j:
//   S_ij   = <Q_i, K_j> / sqrt(d)
//   P_ij   = exp(S_ij - max_k S_ik) / sum_k exp(S_ik - max_k S_ik) over real keys k,
//            P_ij = 0 exactly for padded keys j (and a row with no real key is all zeros)
//   Pd_ij  = P_ij * keep_ij / (1 - p),  keep_ij = dropout_keep(rng, dropout_site_offset(site)
//            + ((b * heads + h) * T + i) * T + j, p)            (kernels/dropout_mask.h)
//   out_i  = sum_j Pd_ij V_j
// Padded queries are computed like real ones (their rows are ignored downstream).
//
// Backward (dqkv written, not accumulated), with the same keep mask regenerated from (rng, site):
//   dV_j = sum_i Pd_ij dout_i,   dPd_ij = <dout_i, V_j>,   dP_ij = dPd_ij * keep_ij / (1 - p)
//   dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik)
//   dQ_i = sum_j dS_ij K_j / sqrt(d),   dK_j = sum_i dS_ij Q_i / sqrt(d)
//
// Saved by the forward: probs [B, heads, T, T] = P (before dropout), in qkv's dtype.
// Workspace (both directions): scratch [B, heads, T, T] in qkv's dtype; its contents are
// undefined afterwards (it holds Pd in the forward, then dPd / dS in the backward).
// Dtypes: CPU, all floating tensors f32 or all f64; CUDA, all f32 or all bf16 (softmax in f32).
// GPU (version 1): cuBLASLt strided-batched GEMMs through matmul_batched around one fused
// scale-mask-softmax-dropout kernel and its backward. A fused flash-style version is not written.
#pragma once

#include <cstdint>

#include "engine/philox.h"
#include "kernels/dispatch.h"

namespace electra {

struct AttentionArgs {
  int64_t heads = 1;
  float dropout_p = 0;  // in [0, 1)
  RngStream rng;        // with `site`, the dropout mask (regenerated in the backward)
  uint32_t site = 0;
};

namespace cpu {
void attention_forward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                       const AttentionArgs& args, const Tensor& probs, const Tensor& scratch,
                       const Tensor& out);
void attention_backward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                        const AttentionArgs& args, const Tensor& probs, const Tensor& dout,
                        const Tensor& scratch, const Tensor& dqkv);
}  // namespace cpu
namespace cuda {
void attention_forward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                       const AttentionArgs& args, const Tensor& probs, const Tensor& scratch,
                       const Tensor& out);
void attention_backward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                        const AttentionArgs& args, const Tensor& probs, const Tensor& dout,
                        const Tensor& scratch, const Tensor& dqkv);
}  // namespace cuda

namespace detail {

// Checks every shape, dtype and device against qkv [B, T, 3H] and heads.
inline void check_attention(const Context& ctx, const Tensor& qkv, const Tensor& mask,
                            const AttentionArgs& args, const Tensor& probs, const Tensor& scratch,
                            const Tensor& out) {
  check_devices(ctx, "attention", {&qkv, &mask, &probs, &scratch, &out});
  ELECTRA_CHECK(qkv.rank == 3 && qkv.dim(2) % 3 == 0, "attention: qkv must be [B, T, 3H], got ",
                qkv.str());
  const int64_t b = qkv.dim(0), t = qkv.dim(1), h = qkv.dim(2) / 3;
  ELECTRA_CHECK(args.heads >= 1 && h % args.heads == 0, "attention: hidden ", h,
                " is not divisible by ", args.heads, " heads");
  ELECTRA_CHECK(args.dropout_p >= 0 && args.dropout_p < 1, "attention: dropout p ", args.dropout_p,
                " not in [0, 1)");
  check_shape(mask, {b, t}, "attention: mask");
  check_dtype(mask, DType::I32, "attention: mask");
  check_shape(probs, {b, args.heads, t, t}, "attention: probs");
  check_shape(scratch, {b, args.heads, t, t}, "attention: scratch");
  check_shape(out, {b, t, h}, "attention: out / dout");
  check_dtype(probs, qkv.dtype, "attention: probs");
  check_dtype(scratch, qkv.dtype, "attention: scratch");
  check_dtype(out, qkv.dtype, "attention: out / dout");
}

}  // namespace detail

inline void attention_forward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                              const AttentionArgs& args, const Tensor& probs, const Tensor& scratch,
                              const Tensor& out) {
  detail::check_attention(ctx, qkv, mask, args, probs, scratch, out);
  if (qkv.empty()) return;
  ELECTRA_DISPATCH(ctx, attention_forward, qkv, mask, args, probs, scratch, out);
}

inline void attention_backward(Context& ctx, const Tensor& qkv, const Tensor& mask,
                               const AttentionArgs& args, const Tensor& probs, const Tensor& dout,
                               const Tensor& scratch, const Tensor& dqkv) {
  detail::check_attention(ctx, qkv, mask, args, probs, scratch, dout);
  check_devices(ctx, "attention", {&dqkv});
  check_same_shape(dqkv, qkv, "attention: dqkv vs qkv");
  check_dtype(dqkv, qkv.dtype, "attention: dqkv");
  if (qkv.empty()) return;
  ELECTRA_DISPATCH(ctx, attention_backward, qkv, mask, args, probs, dout, scratch, dqkv);
}

}  // namespace electra
