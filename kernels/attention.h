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
//   Pd_ij  = P_ij * keep_ij / (1 - p),  keep_ij = attention_keep(rng, attention_mask_index(
//            dropout_site_offset(site), b * heads + h, T, i, j), p)   (kernels/dropout_mask.h:
//            16-bit uniforms, 8 to a Philox call; rows round_up(T, 8) apart in the index)
//   out_i  = sum_j Pd_ij V_j
// Padded queries are computed like real ones (their rows are ignored downstream).
//
// Backward (dqkv written, not accumulated), with the same keep mask (regenerated from (rng, site),
// or read back where the bf16 flash forward saved it: `keep` below):
//   dV_j = sum_i Pd_ij dout_i,   dPd_ij = <dout_i, V_j>,   dP_ij = dPd_ij * keep_ij / (1 - p)
//   dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik)
//   dQ_i = sum_j dS_ij K_j / sqrt(d),   dK_j = sum_i dS_ij Q_i / sqrt(d)
//
// Four GPU implementations, chosen by AttentionArgs::impl (the CPU reference ignores it):
// - v1 (kUnfused): cuBLASLt strided-batched GEMMs through matmul_batched around one fused
//   scale-mask-softmax-dropout kernel and its backward (kernels/attention.cu).
//   Saved by the forward: probs [B, heads, T, T] = P (before dropout), in qkv's dtype.
//   Workspace (both directions): scratch [B, heads, T, T] f32 whatever qkv's dtype; its contents
//   are undefined afterwards. It holds Pd (qkv's dtype) in the forward, then dPd in f32 and dS
//   (qkv's dtype) in the backward: dPd = dout V^T is a cuBLASLt GEMM with an f32 output, because
//   the softmax backward subtracts the row dot product sum_k P_ik dP_ik from it, which cancels
//   (with positive V and dout a bf16 dPd gave dQ / dK normwise errors of 2-4%, 0.3-0.5% in f32:
//   test/kernels/bf16_emulation_test.cpp).
// - v2 (kFlash): FlashAttention-2 style fused kernels (kernels/attention_flash.cu), nothing of
//   size T^2 in memory; for T <= 512 and d <= 128. The forward keeps O (in registers for bf16,
//   in shared memory for f32) with an online softmax and saves only the per-row logsumexp
//     saved = L [B, heads, T] f32,  L_i = max_k S_ik + log sum_k exp(S_ik - max_k S_ik) over
//     real keys (+inf for a row with no real key, so that exp(S_ij - L_i) = 0),
//   the backward recomputes P_ij = exp(S_ij - L_i) tile by tile and needs the forward's output
//   `out` for D_i = <dout_i, out_i> = sum_k P_ik dP_ik, which its blocks compute for the rows they
//   read. The scratch, [B, heads, T] f32, is used by neither direction (it held D while the
//   backward was two launches; the callers still plan it with the saved state's shape).
// - v2 with a dS GEMM (kFlashDsGemm; measured no faster than v2 on 2026-11-28, so kAuto never
//   picks it): v2's forward and saved L, the same shapes supported; its backward runs only v2's dK,
//   dV blocks, which also write dS (before the 1 / sqrt(d) scale, in qkv's dtype: the bf16 values
//   the dK product uses) into the scratch, then dQ = dS K / sqrt(d) is min(B, heads)
//   strided-batched cuBLASLt GEMMs as in v1, instead of v2's dQ blocks recomputing S, P and dPd.
//   Scratch (the backward's; the forward leaves it alone): dS^T [B, heads, T (key), T (query)] in
//   qkv's dtype (bf16 or f32), every element written (0 for padded keys), undefined afterwards.
//   Key-major because the dK, dV blocks hold dS^T: a lane's two consecutive queries of one key are
//   one 4-byte store, and cuBLASLt reads the transpose at no cost.
// - kFlashShort, one block per head at short T (kAuto picks it where it applies: measured faster
//   than v2 on every such shape, bench/RESULTS.md 2026-11-28): for
//   bf16 at T <= 128 and d = 64 exactly (attention_uses_short: every ELECTRA size at the paper's
//   pre-training length) each direction is one kernel of one block of 8 warps per (b, head) that
//   holds the whole head in shared memory (kernels/attention_flash_short.cu), with v2's saved L
//   and v2's keep bits. Forward: warp w takes queries 16 w .. 16 w + 15 (a warp with 16 w >= T
//   only passes the barriers) against all keys at once: S in registers, the exact row max (no
//   online rescaling), P, its row sum l, Pd (rounded to bf16 as v2 rounds it) and O = Pd V, then
//   out = O / l and L = m + log l as v2's forward ends: a row with no real key gets out 0 and
//   L = +inf, rows past T are never written. out and L equal v2's up to rounding, not bit for bit
//   (v2 adds l and O per 64-key tile, rescaled by its running max, so its P and bf16 Pd can
//   differ in the last bits). Backward:
//   S, dPd, dS and dQ per query row, then dK and dV per key row from Pd and dS left in shared
//   memory: S and dPd once each, no atomics, v2's D, Pd and dS rounded to bf16 where v2 rounds
//   them. Any other dtype or shape runs v2's forward and backward exactly. Scratch: as v2's
//   ([B, heads, T] f32, unused).
// The bf16 flash kernels (kFlash, kFlashDsGemm, kFlashShort; not the f32 ones) draw the keep bits
// once: they take `keep` [B * heads, ceil(T / 16), ceil(T / 8), 4] i32, into which the forward at
// p > 0 writes its keep bits (flash_layout::keep_tile_word / keep_at: tiles of 16 queries x 8
// keys, bit `lane` of word e the bit of element e of that lane's mma.sync C fragment; the bits of
// the last tiles' elements outside T are unspecified; T^2 / 8 bytes a head when 16 divides T),
// and from which the backward reads them instead of drawing them again
// (v2's backward drew every bit twice, once in each role); at p = 0 neither touches it. Other
// calls take no `keep` (an unset Tensor{}).
// The CPU reference is always "v1" (probs and scratch [B, heads, T, T], both in qkv's dtype).
// attention_state() says which one a call gets and the shape and dtypes of its `saved` and
// `scratch`, so a caller plans them once (kernels/attention_flash.h declares version 2's entry
// points).
// Dtypes: CPU, all floating tensors f32 or all f64; CUDA, all f32 or all bf16 (softmax in f32)
// except the flash L (f32) and the scratch: f32, but in qkv's dtype for kFlashDsGemm.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/philox.h"
#include "kernels/attention_flash_layout.h"
#include "kernels/dispatch.h"

namespace electra {

enum class AttentionImpl {
  kAuto,         // kFlashShort's kernels where attention_uses_short allows them, else flash
                 // where attention_uses_flash does, else v1
  kUnfused,      // v1
  kFlash,        // v2; a shape it does not support throws instead of falling back
  kFlashDsGemm,  // v2's forward; backward: v2's dK, dV blocks writing dS, then dQ by GEMMs;
                 // a shape flash does not support throws
  kFlashShort,   // one block per head each way at bf16, T <= 128, d = 64, else v2's; a shape
                 // flash does not support throws
};

struct AttentionArgs {
  int64_t heads = 1;
  float dropout_p = 0;  // in [0, 1)
  RngStream rng;        // with `site`, the dropout mask (regenerated in the backward, or read
                        // from the forward's saved keep bits: `keep`)
  uint32_t site = 0;
  AttentionImpl impl = AttentionImpl::kAuto;  // GPU only
};

// The shapes the flash kernels are written and tested for: T up to BERT's 512 positions, head
// dims up to their widest tile (128 columns).
constexpr int64_t kFlashMaxSeqLen = 512;
constexpr int64_t kFlashMaxHeadDim = 128;

// The shapes kFlashShort's kernels are written for: the whole head in one block.
constexpr int64_t kFlashShortMaxSeqLen = 128;
constexpr int64_t kFlashShortHeadDim = 64;

// Whether a call on `device` with qkv [B, t, 3h] runs the flash kernels: on CUDA, impl kAuto,
// kFlash, kFlashDsGemm or kFlashShort, t <= 512 and d = h / heads <= 128. The CPU reference never
// does. Throws for every impl but kAuto and kUnfused on a shape flash does not support.
inline bool attention_uses_flash(Device device, const AttentionArgs& args, int64_t t, int64_t h) {
  if (device != Device::CUDA || args.impl == AttentionImpl::kUnfused) return false;
  const bool supported = args.heads >= 1 && h % args.heads == 0 && t <= kFlashMaxSeqLen &&
                         h / args.heads <= kFlashMaxHeadDim;
  ELECTRA_CHECK(supported || args.impl == AttentionImpl::kAuto,
                "attention: flash needs T <= ", kFlashMaxSeqLen,
                " and head dim <= ", kFlashMaxHeadDim, ", got T = ", t, ", H = ", h,
                ", heads = ", args.heads);
  return supported;
}

// Whether that call's backward is kFlashDsGemm's: flash dK, dV blocks writing dS, dQ by GEMMs.
inline bool attention_uses_ds_gemm(Device device, const AttentionArgs& args, int64_t t, int64_t h) {
  return attention_uses_flash(device, args, t, h) && args.impl == AttentionImpl::kFlashDsGemm;
}

// Whether that call, qkv in `dtype`, runs kFlashShort's kernels (its forward and its one-pass
// backward, both directions alike): impl kFlashShort or kAuto, bf16, t <= 128 and
// d = h / heads = 64; the other flash calls of either run v2's forward and backward.
inline bool attention_uses_short(Device device, const AttentionArgs& args, int64_t t, int64_t h,
                                 DType dtype) {
  return attention_uses_flash(device, args, t, h) &&
         (args.impl == AttentionImpl::kFlashShort || args.impl == AttentionImpl::kAuto) &&
         dtype == DType::BF16 && t <= kFlashShortMaxSeqLen && h / args.heads == kFlashShortHeadDim;
}

// The state one call keeps besides its inputs and outputs: `saved` (written by the forward, read
// by the backward; numel() elements) and `scratch` (the workspace of both directions;
// scratch_numel() elements). saved is [B, heads, T, T] in `dtype` = qkv's for version 1 and the
// CPU (P), [B, heads, T] f32 for flash (L; kFlashShort's too). scratch is [B, heads, T, T] for
// version 1 and the CPU (Pd / dPd / dS) and for kFlashDsGemm (dS^T), [B, heads, T] for the other
// flash calls (unused; kFlashShort's kernels need none either); in
// `scratch_dtype`: qkv's on the CPU and for kFlashDsGemm, else f32. Except for kFlashDsGemm,
// numel() == scratch_numel().
struct AttentionState {
  bool flash = false;                // saved = L [B, heads, T] (else P [B, heads, T, T])
  bool ds_scratch = false;           // kFlashDsGemm: scratch = dS^T [B, heads, T, T], though flash
  bool keep_words = false;           // bf16 flash: the call takes `keep` (the saved keep bits)
  DType dtype = DType::F32;          // saved's
  DType scratch_dtype = DType::F32;  // scratch's
  int64_t batch = 0, heads = 0, seq_len = 0;

  int64_t numel() const { return elements(flash); }
  int64_t scratch_numel() const { return elements(scratch_rows()); }
  // `flat` (numel() elements of `dtype`) as the saved tensor, with the state's dims.
  Tensor view(const Tensor& flat) const { return shaped(flat, flash, dtype, "attention state"); }
  // `flat` (scratch_numel() elements of `scratch_dtype`) as the scratch, with the state's dims.
  Tensor scratch_view(const Tensor& flat) const {
    return shaped(flat, scratch_rows(), scratch_dtype, "attention scratch");
  }
  void check(const Tensor& t, const char* what) const { check_as(t, flash, dtype, what); }
  void check_scratch(const Tensor& t, const char* what) const {
    check_as(t, scratch_rows(), scratch_dtype, what);
  }
  // The saved keep bits (keep_words): keep_numel() i32 (0 without them), viewed by keep_view as
  // [B * heads, ceil(T / 16), ceil(T / 8), 4].
  int64_t keep_numel() const {
    return keep_words ? batch * heads * flash_layout::keep_words_per_head(seq_len) : 0;
  }
  Tensor keep_view(const Tensor& flat) const {
    check_dtype(flat, DType::I32, "attention keep bits");
    return flat.reshape({batch * heads, flash_layout::keep_query_tiles(seq_len),
                         flash_layout::keep_key_tiles(seq_len), 4});
  }
  void check_keep(const Tensor& t, const char* what) const {
    check_tensor(t,
                 {batch * heads, flash_layout::keep_query_tiles(seq_len),
                  flash_layout::keep_key_tiles(seq_len), 4},
                 DType::I32, what);
  }

 private:
  // Whether the scratch is [B, heads, T] (one element per row) rather than [B, heads, T, T].
  bool scratch_rows() const { return flash && !ds_scratch; }
  int64_t elements(bool rows) const { return batch * heads * seq_len * (rows ? 1 : seq_len); }
  // `rows`: [B, heads, T], else [B, heads, T, T].
  Tensor shaped(const Tensor& flat, bool rows, DType want, const char* what) const {
    check_dtype(flat, want, what);
    return rows ? flat.reshape({batch, heads, seq_len})
                : flat.reshape({batch, heads, seq_len, seq_len});
  }
  void check_as(const Tensor& t, bool rows, DType want, const char* what) const {
    if (rows) {
      check_tensor(t, {batch, heads, seq_len}, want, what);
    } else {
      check_tensor(t, {batch, heads, seq_len, seq_len}, want, what);
    }
  }
};

// The state of a call on `device` with qkv [batch, seq_len, 3 hidden] of dtype `qkv_dtype`.
inline AttentionState attention_state(Device device, const AttentionArgs& args, int64_t batch,
                                      int64_t seq_len, int64_t hidden, DType qkv_dtype) {
  const bool flash = attention_uses_flash(device, args, seq_len, hidden);
  const bool ds = attention_uses_ds_gemm(device, args, seq_len, hidden);
  const DType scratch = device == Device::CUDA && !ds ? DType::F32 : qkv_dtype;
  return AttentionState{.flash = flash,
                        .ds_scratch = ds,
                        .keep_words = flash && qkv_dtype == DType::BF16,
                        .dtype = flash ? DType::F32 : qkv_dtype,
                        .scratch_dtype = scratch,
                        .batch = batch,
                        .heads = args.heads,
                        .seq_len = seq_len};
}

namespace detail {

// Checks every shape and dtype against qkv [B, T, 3H] and heads; `out` is out (forward)
// or dout (backward), `keep` the saved keep bits (required where the state has them, else
// unset). Returns whether the call runs the flash kernels.
inline bool check_attention(const Context& ctx, const Tensor& qkv, const Tensor& mask,
                            const AttentionArgs& args, const Tensor& saved, const Tensor& scratch,
                            const Tensor& out, const Tensor& keep) {
  ELECTRA_CHECK(qkv.rank == 3 && qkv.dim(2) % 3 == 0, "attention: qkv must be [B, T, 3H], got ",
                qkv.str());
  const int64_t b = qkv.dim(0), t = qkv.dim(1), h = qkv.dim(2) / 3;
  ELECTRA_CHECK(args.heads >= 1 && h % args.heads == 0, "attention: hidden ", h,
                " is not divisible by ", args.heads, " heads");
  ELECTRA_CHECK(args.dropout_p >= 0 && args.dropout_p < 1, "attention: dropout p ", args.dropout_p,
                " not in [0, 1)");
  check_tensor(mask, {b, t}, DType::I32, "attention: mask");
  const AttentionState state = attention_state(ctx.device(), args, b, t, h, qkv.dtype);
  state.check(saved, state.flash ? "attention (flash): saved logsumexp" : "attention: probs");
  state.check_scratch(scratch, state.ds_scratch ? "attention (flash, dS GEMM): scratch dS"
                               : state.flash    ? "attention (flash): scratch"
                                                : "attention: scratch");
  check_tensor(out, {b, t, h}, qkv.dtype, "attention: out / dout");
  if (state.keep_words) {
    state.check_keep(keep, "attention (flash, bf16): keep bits");
  } else {
    ELECTRA_CHECK(keep.data == nullptr, "attention: keep bits ", keep.str(),
                  " given to a call that saves none (only the bf16 flash kernels do)");
  }
  return state.flash;
}

// What one call launches (attention.cu, attention_flash.cu, attention_flash_bf16.cu,
// attention_flash_short.cu). Flash: one kernel each way (the backward's grid holds its dK, dV
// blocks and its dQ blocks; kFlashShort's forward and one-pass backward are one kernel each too);
// kFlashDsGemm's backward: one kernel (dK, dV blocks only) and the dQ GEMM per step of
// min(heads, B). Version 1 loops min(heads, B) times over strided-batched cuBLASLt GEMMs: the
// forward QK^T and PV per step around the softmax kernel; the backward dV, dPd, dQ and dK per step,
// the softmax backward and, with dropout, the kernel re-applying it to P.
inline Launches attention_launches(const Tensor& qkv, const AttentionArgs& args, bool backward) {
  if (qkv.numel() == 0) return {};
  const int64_t b = qkv.dim(0), t = qkv.dim(1), h = qkv.dim(2) / 3;
  const int64_t steps = std::min(args.heads, b);
  if (backward && attention_uses_ds_gemm(Device::CUDA, args, t, h))
    return {.kernels = 1, .library_calls = steps};
  if (attention_uses_flash(Device::CUDA, args, t, h)) return {.kernels = 1};
  if (!backward) return {.kernels = 1, .library_calls = 2 * steps};
  return {.kernels = args.dropout_p > 0 ? 2 : 1, .library_calls = 4 * steps};
}

// The model's matmul FLOPs: QK^T and PV forward (2 B T^2 H each), twice that backward (dV, dP,
// dQ, dK; flash's recomputation of S is not counted).
inline double attention_flops(const Tensor& qkv, bool backward) {
  const double b = static_cast<double>(qkv.dim(0)), t = static_cast<double>(qkv.dim(1));
  const double h = static_cast<double>(qkv.dim(2) / 3);
  return (backward ? 8 : 4) * b * t * t * h;
}

}  // namespace detail

struct AttentionForward {
  static constexpr const char* kName = "attention_forward";
  In qkv, mask;
  AttentionArgs args;
  Out saved, scratch, out;
  // The keep bits where the state has them (AttentionState::keep_view; written at p > 0 only),
  // else unset.
  Out keep = Out(Tensor{});

  void check(const Context& ctx) const {
    detail::check_attention(ctx, qkv, mask, args, saved, scratch, out, keep);
  }
  Launches launches() const { return detail::attention_launches(qkv, args, false); }
  double flops() const { return detail::attention_flops(qkv, false); }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

struct AttentionBackward {
  static constexpr const char* kName = "attention_backward";
  In qkv, mask;
  AttentionArgs args;
  In saved, dout;
  Out scratch, dqkv;
  // The forward's output, unchanged since; only the flash backward reads it (for D), so callers
  // that never run flash (the CPU, impl kUnfused) may leave it out.
  In out = Tensor{};
  // The keep bits the forward saved, where it saves them (AttentionForward::keep), else unset.
  In keep = Tensor{};

  void check(const Context& ctx) const {
    const bool flash = detail::check_attention(ctx, qkv, mask, args, saved, scratch, dout, keep);
    check_same_shape(dqkv, qkv, "attention: dqkv vs qkv");
    check_dtype(dqkv, qkv.dtype, "attention: dqkv");
    if (flash) {
      check_same_shape(out, dout, "attention (flash): the forward's out vs dout");
      check_dtype(out, qkv.dtype, "attention (flash): the forward's out");
    }
  }
  Launches launches() const { return detail::attention_launches(qkv, args, true); }
  double flops() const { return detail::attention_flops(qkv, true); }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
