// ElectraGenerator: HF's ElectraForMaskedLM evaluated at the masked positions only: an encoder
// and its MLM head (models/mlm_head.h, which gives the formulas and the padded vocabulary).
//   h = Encoder(masked ids)                            [B, T, Hg]
//   z = MlmHead(h, positions)                          [B * N, Vp]
// backward() takes dz = d loss / d z explicitly (models/loss_gradient.h). Gradients reach the
// shared word table twice: from the logits and the lookup.
#pragma once

#include "models/encoder.h"
#include "models/mlm_head.h"

namespace electra {

class ElectraGenerator {
 public:
  static constexpr const char* kPrefix = "generator/";
  // generator_training: adversarial's baseline, kPrefix + this (models/pretrainer.h); saved with
  // the generator.
  static constexpr const char* kAdversarialBaseline = "adversarial_baseline.";

  // Slots: N masked positions per sequence. The padded vocabulary is the row count of
  // tables.word_padded. With `tied_to` (sharing: all) the encoder's parameters are those of
  // another model's encoder, "<tied_to>electra.*", declared before and found by a reusing builder
  // (ModelBuilder::set_reusing); the head stays the generator's own.
  ElectraGenerator(ModelBuilder& builder, const EncoderConfig& config,
                   const EmbeddingTables& tables, int64_t batch, int64_t seq_len, int64_t slots,
                   const char* tied_to = nullptr);

  // ids, segment_ids, mask i32 [B, T]; positions i32 [B, N] (views kept for the backward).
  void forward(Context& ctx, const DropoutPass& pass, const Tensor& ids, const Tensor& segment_ids,
               const Tensor& mask, const Tensor& positions);
  const Tensor& logits() const { return head_.logits(); }  // [B * N, Vp]
  // h_G at the masked positions [B * N, H] (from the last forward).
  const Tensor& masked_hidden() const { return head_.gathered(); }
  // The backward from dlogits = d loss / d logits [B * N, Vp] (refused when unset: no loss ran),
  // in two calls. backward_own(): the gradients of this model's own parameters (with a tied
  // encoder, also that encoder's) and buffers: the head but its word-table GEMM, the layers, the
  // embedding projection; `ready` (optional) receives the head's parameter span when its
  // gradients are final, then the encoder's spans (models/encoder.h), not those of a tied
  // encoder, whose gradients the other model's backward completes (and reports).
  // backward_tables(): the embedding tables' gradients (shared with the discriminator unless
  // sharing: none or gdes): the head's word-table GEMM, the embedding LayerNorm and the lookup.
  void backward_own(Context& ctx, const DropoutPass& pass, const Tensor& dlogits,
                    const GradientsReady& ready = {});
  void backward_tables(Context& ctx, const DropoutPass& pass, const Tensor& dlogits);

  const Encoder& encoder() const { return encoder_; }
  Encoder& encoder() { return encoder_; }

 private:
  bool tied_ = false;
  Encoder encoder_;
  MlmHead head_;
};

}  // namespace electra
