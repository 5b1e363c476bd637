// ElectraGenerator: HF's ElectraForMaskedLM evaluated at the masked positions only.
//   h   = Encoder(masked ids)                          [B, T, Hg]
//   x   = h[b, positions[b, k]]                        [B * N, Hg]   (kernels/gather.h)
//   u   = x Wd^T,  g = gelu(u + bd)                    [B * N, E]    (generator_predictions.dense)
//   n   = LayerNorm(g)                                 (generator_predictions.LayerNorm)
//   z   = n W_word^T + b_out                           [B * N, Vp]   (the SHARED word table, tied
//                                                       as in HF; b_out = generator_lm_head.bias)
// Vp >= V is the padded vocabulary: the word table's and the bias's padding rows
// (EmbeddingTables, ParameterStore) make the GEMM's N a multiple of 128 (tensor-core tiles). The
// padding rows are zero, so columns >= V of z are 0; the loss op ignores them (never sampled, never
// the argmax) and writes their dz as 0. The backward's GEMMs over the vocabulary read only the V
// real columns of dz (a strided view): the same sums as without padding, bit for bit on the CPU.
// The loss op (kernels/softmax_xent.h) replaces z by dz in place; backward() then reads logits()
// as the gradient. Gradients reach the shared word table twice: from the logits and the lookup.
#pragma once

#include "models/encoder.h"

namespace electra {

class ElectraGenerator {
 public:
  static constexpr const char* kPrefix = "generator/";

  // Slots: N masked positions per sequence. The padded vocabulary is the row count of
  // tables.word_padded.
  ElectraGenerator(ModelBuilder& builder, const EncoderConfig& config,
                   const EmbeddingTables& tables, int64_t batch, int64_t seq_len, int64_t slots);

  // ids, segment_ids, mask i32 [B, T]; positions i32 [B, N] (views kept for the backward).
  void forward(Context& ctx, const Pass& pass, const Tensor& ids, const Tensor& segment_ids,
               const Tensor& mask, const Tensor& positions);
  const Tensor& logits() const { return logits_; }  // [B * N, Vp]; holds dz before backward()
  // `ready` (optional) receives the head's parameter span when its gradients are final, then the
  // encoder's spans (models/encoder.h).
  void backward(Context& ctx, const Pass& pass, const GradientsReady& ready = {});

  const Encoder& encoder() const { return encoder_; }
  Encoder& encoder() { return encoder_; }

 private:
  EncoderConfig config_;
  const EmbeddingTables* tables_;
  Encoder encoder_;
  ParamSpan head_span_;  // the parameters declared after the encoder
  Linear dense_;
  LayerNorm norm_;
  Param output_bias_;  // [Vp]: generator_lm_head.bias with its padding
  Tensor positions_;
  Tensor gathered_, pre_, act_, normed_, logits_;  // saved
  Tensor grad_normed_, grad_act_, grad_pre_, grad_gathered_, reduce_;
};

}  // namespace electra
