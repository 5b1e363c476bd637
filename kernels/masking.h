// masking: ELECTRA's dynamic masking of a pre-training batch, identical on CPU and GPU.
//
// Shapes: ids [B, T] i32 -> masked_ids [B, T] i32, positions [B, N] i32, original [B, N] i32,
// weights [B, N] f32, with N = max_predictions(p, T) in the usual case (any N >= 0 works).
// Per sequence b:
//   non_pad    = #{t : ids[b, t] != pad}
//   candidates = {t : ids[b, t] not in {pad, cls, sep}}
//   k          = min(N, #candidates, max(1, round_half_even(p * non_pad)))
// i.e. the official max(1, min(N, round(p * non_pad))) additionally capped by the candidates: a
// sequence without candidates gets k = 0 (nothing masked, all slots empty). p * non_pad is one
// exactly rounded f32 multiply and rounds half to even like tf.round.
// Choice: k candidates uniformly WITHOUT replacement (the official code's duplicates are an
// artefact): candidate t gets the key stream.bits(b * T + t) and the k smallest (key, t) win.
// Slots 0..k-1 hold the chosen positions in ascending order, their original ids and weight 1;
// slots k..N-1 hold position 0, id 0, weight 0.
// masked_ids = ids, except at a chosen position (masked_token below), with
// u = stream.bits(kMaskingDecisionOffset + b * T + t):
//   u < threshold(mask_token_prob)                       -> `mask` (0.85 by default: ELECTRA)
//   u < threshold(mask_token_prob + random_token_prob)   -> a uniform random id in [0, vocab_size),
//       floor(stream.bits(kMaskingRandomOffset + b * T + t) * vocab_size / 2^32) (BERT's 10%)
//   otherwise                                            -> keeps its token.
// ELECTRA uses random_token_prob = 0; the `mlm` objective BERT's 0.8 / 0.1 / 0.1.
// Every decision is an integer comparison, so CPU and GPU outputs are bit-identical.
//
// T <= kMaskingMaxSeqLen (BERT's 512 positions) on both devices. CUDA: one block per sequence.
// No workspace.
#pragma once

#include <cstdint>

#include "engine/device_scalar.h"
#include "kernels/dispatch.h"

namespace electra {

constexpr int kMaskingMaxSeqLen = 512;
// The mask-or-keep draws start here so that they never overlap the selection keys (b * T + t).
constexpr uint64_t kMaskingDecisionOffset = uint64_t{1} << 40;
// The random-token draws (BERT corruption) start here, after the decisions.
constexpr uint64_t kMaskingRandomOffset = uint64_t{2} << 40;

struct MaskingParams {
  int32_t pad_id = 0;
  int32_t cls_id = 101;
  int32_t sep_id = 102;
  int32_t mask_id = 103;
  // p: a value, or device memory (the step scalars' rate: a masking-rate schedule)
  DeviceScalar<float> mask_prob = 0.15f;
  float mask_token_prob = 0.85f;   // a chosen position becomes [MASK] with this probability
  float random_token_prob = 0.0f;  // ... else a random id with this one (needs vocab_size)
  int32_t vocab_size = 0;
  RngStream stream;  // usually ctx.rng(RngPurpose::kMasking, step)
};

// The official ELECTRA/BERT slot count: int((p + 0.005) * seq_len), e.g. 19 for p = 0.15, T = 128.
inline int max_predictions(float p, int seq_len) {
  return static_cast<int>((static_cast<double>(p) + 0.005) * seq_len);
}

// bits < threshold happens with probability `prob` (to within 2^-32).
inline uint32_t probability_threshold(float prob) {
  if (prob <= 0) return 0;
  if (prob >= 1) return UINT32_MAX;
  return static_cast<uint32_t>(static_cast<double>(prob) * 4294967296.0);
}

// round(p * n) with ties to even, from one exactly rounded f32 multiply (identical on both sides).
ELECTRA_HD int masking_target_count(float p, int n) {
  const float x = mul_rn(p, static_cast<float>(n));
  const int whole = static_cast<int>(x);  // x >= 0: truncation is floor
  const float frac = add_rn(x, -static_cast<float>(whole));
  if (frac > 0.5f || (frac == 0.5f && (whole & 1))) return whole + 1;
  return whole;
}

// What a chosen position holds after corruption (see the top of this file); thresholds from
// probability_threshold(mask_token_prob) and (mask_token_prob + random_token_prob).
// `stream` is params.stream resolved (its step read once by the op).
ELECTRA_HD int32_t masked_token(const MaskingParams& params, const RngStream& stream,
                                uint32_t mask_threshold, uint32_t random_threshold, uint64_t index,
                                int32_t id) {
  const uint32_t u = stream.bits(kMaskingDecisionOffset + index);
  if (u < mask_threshold) return params.mask_id;
  if (u >= random_threshold) return id;
  const uint64_t r = stream.bits(kMaskingRandomOffset + index);
  return static_cast<int32_t>((r * static_cast<uint64_t>(params.vocab_size)) >> 32);
}

struct MaskTokens {
  static constexpr const char* kName = "mask_tokens";
  In ids;
  MaskingParams params;
  Out masked_ids, positions, original, weights;

  void check() const {
    ELECTRA_CHECK(ids.rank == 2, "mask_tokens: ids must be [B, T], got ", ids.str());
    ELECTRA_CHECK(positions.rank == 2, "mask_tokens: positions must be [B, N], got ",
                  positions.str());
    const int64_t b = ids.dim(0), t = ids.dim(1), n = positions.dim(1);
    check_dtype(ids, DType::I32, "mask_tokens ids");
    check_tensor(masked_ids, {b, t}, DType::I32, "mask_tokens masked_ids");
    check_tensor(positions, {b, n}, DType::I32, "mask_tokens positions");
    check_tensor(original, {b, n}, DType::I32, "mask_tokens original");
    check_tensor(weights, {b, n}, DType::F32, "mask_tokens weights");
    ELECTRA_CHECK(params.mask_prob.at != nullptr ||
                      (params.mask_prob.value >= 0 && params.mask_prob.value <= 1),
                  "mask_tokens: mask_prob ", params.mask_prob.value);
    ELECTRA_CHECK(params.random_token_prob >= 0 && params.mask_token_prob >= 0 &&
                      params.mask_token_prob + params.random_token_prob <= 1.0f + 1e-6f &&
                      (params.random_token_prob == 0 || params.vocab_size > 0),
                  "mask_tokens: mask_token_prob ", params.mask_token_prob, ", random_token_prob ",
                  params.random_token_prob, ", vocab_size ", params.vocab_size);
    ELECTRA_CHECK(t <= kMaskingMaxSeqLen, "mask_tokens: seq_len ", t, " > ", kMaskingMaxSeqLen);
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
