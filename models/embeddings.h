// Embeddings: BERT/ELECTRA input embeddings, then the optional projection to the hidden size.
//
//   e   = word[ids] + position[t] + segment[segment_ids]          [B, T, E]   (kernels/embedding.h)
//   n   = LayerNorm(e)                                             (eps from the config)
//   d   = dropout(n)                                               (site DropoutSites::embeddings)
//   out = d W_p^T + b_p  when E != H (`embeddings_project`), else out = d      [B, T, H]
// The first three are one op (embedding_forward); the backward of the dropout and the LayerNorm
// is one (layernorm_backward with its dy_dropout), then the lookup gradient.
//
// The tables and the embedding LayerNorm are EmbeddingTables, shared by the generator and the
// discriminator: both models' backward passes accumulate into the same
// gradients. The projection belongs to each model.
#pragma once

#include <string>

#include "models/dropout_pass.h"
#include "models/electra_config.h"
#include "models/linear.h"

namespace electra {

// word_embeddings [V, E], position_embeddings [P, E], token_type_embeddings [S, E] and the
// embedding LayerNorm, named `prefix`embeddings.* as in HF (prefix "discriminator/electra.").
// With vocab_rows > V the word table reserves zero padding rows up to vocab_rows
// (ParameterStore): `word_padded` [vocab_rows, E] is what the generator's logits GEMM reads; the
// lookup never reaches the padding (ids < V) and the HF shape of `word` is unchanged.
struct EmbeddingTables {
  EmbeddingTables() = default;
  EmbeddingTables(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
                  int64_t vocab_rows = 0);

  Param word, word_padded, position, segment, norm_gamma, norm_beta;
};

// sharing: gdes (DeBERTaV3's gradient-disentangled embedding sharing, docs/OBJECTIVES.md): the
// discriminator's word, position and segment tables are
//   E_D = sg(E_G) + E_delta
// with E_G the generator's tables (`base`) and E_delta residuals of the discriminator's own,
// `prefix`embeddings.{word,position,token_type}_embeddings.delta (same shapes and padding rows;
// zero at the start of a run: ElectraPretrainer::init_weights). `tables` is what the
// discriminator reads: those three have value = compute = E_D, a planned buffer refresh() writes
// (once per micro-step, before the discriminator's forward), and grad = E_delta's gradient, so the
// lookup's backward reaches E_delta and never E_G (the stop-gradient). The embedding LayerNorm is
// the discriminator's own (`prefix`embeddings.LayerNorm.*).
// The residual tables' names end so: "discriminator/electra.embeddings.word_embeddings.delta".
inline constexpr const char* kGdesResidualSuffix = ".delta";
inline bool is_gdes_residual(const std::string& name) {
  return name.ends_with(kGdesResidualSuffix);
}

class GdesTables {
 public:
  GdesTables() = default;
  GdesTables(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
             int64_t vocab_rows, const EmbeddingTables& base);

  // E_D = E_G + E_delta for the three tables (kernels/elementwise_add.h), and the compute copy
  // of the word table when matmuls read another dtype (bf16: an MLM head on the discriminator).
  void refresh(Context& ctx) const;
  const EmbeddingTables& tables() const { return tables_; }

 private:
  struct Summed {
    Tensor base, delta, sum;  // the padded word table, [Vp, E], or a plain table
  };
  EmbeddingTables tables_;
  Summed word_, position_, segment_;
  Tensor word_compute_;  // [Vp, E] in the activation dtype when it is not the master's
};

class Embeddings {
 public:
  Embeddings() = default;
  // `prefix` names this model's projection (`prefix`embeddings_project.*); `workspace` is the
  // encoder's f32 reduction scratch.
  Embeddings(ModelBuilder& builder, const EmbeddingTables& tables, const std::string& prefix,
             const EncoderConfig& config, int64_t batch, int64_t seq_len, uint32_t site,
             const Tensor& workspace);

  // ids, segment_ids i32 [B, T] (kept as views until the backward); out [B, T, H].
  void forward(Context& ctx, const DropoutPass& pass, const Tensor& ids, const Tensor& segment_ids,
               const Tensor& out);
  // A training forward (pass.training) also sorts the ids for the backward (kernels/embedding.h);
  // an inference forward does not, and no backward may follow it.
  // The backward from dout [B, T, H] computes parameter gradients only (the ids need none), in two
  // calls with the same dout, which may be overwritten: backward_projection() (the projection's
  // gradients when E != H, and its input's), then backward_tables() (the LayerNorm's and the
  // lookup's: the tables' gradients, shared with the other model).
  void backward_projection(Context& ctx, const Tensor& dout);
  void backward_tables(Context& ctx, const DropoutPass& pass, const Tensor& dout);

 private:
  const EmbeddingTables* tables_ = nullptr;
  EncoderConfig config_;
  uint32_t site_ = 0;
  float eps_ = 0;
  Linear project_;
  Tensor ids_, segment_ids_;
  Tensor sum_, dropped_;  // [B, T, E]; dropped_ only with the projection
  Tensor mean_, rstd_;    // [B, T]: the embedding LayerNorm's statistics
  // [B, T, E]: the gradients of the projection's input `dropped_` (with the projection) and of
  // the tables' sum.
  Tensor grad_dropped_, grad_sum_;
  Tensor workspace_;         // the encoder's f32 reduction scratch (LayerNorm backward)
  Tensor lookup_workspace_;  // GPU: the sorted ids, from the forward to the backward
  bool sorted_ = false;      // the last forward sorted the ids
};

}  // namespace electra
