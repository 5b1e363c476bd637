// Embeddings: BERT/ELECTRA input embeddings, then the optional projection to the hidden size.
//
//   e   = word[ids] + position[t] + segment[segment_ids]          [B, T, E]   (kernels/embedding.h)
//   n   = LayerNorm(e)                                             (eps from the config)
//   d   = dropout(n)                                               (site DropoutSites::embeddings)
//   out = d W_p^T + b_p  when E != H (`embeddings_project`), else out = d      [B, T, H]
//
// The tables and the embedding LayerNorm are EmbeddingTables, shared by the generator and the
// discriminator: both models' backward passes accumulate into the same
// gradients. The projection belongs to each model.
#pragma once

#include <string>

#include "models/electra_config.h"
#include "models/layer_norm.h"
#include "models/linear.h"
#include "models/pass.h"

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

class Embeddings {
 public:
  Embeddings() = default;
  // `prefix` names this model's projection (`prefix`embeddings_project.*); `workspace` is the
  // encoder's f32 reduction scratch.
  Embeddings(ModelBuilder& builder, const EmbeddingTables& tables, const std::string& prefix,
             const EncoderConfig& config, int64_t batch, int64_t seq_len, uint32_t site,
             const Tensor& workspace);

  // ids, segment_ids i32 [B, T] (kept as views until the backward); out [B, T, H].
  void forward(Context& ctx, const Pass& pass, const Tensor& ids, const Tensor& segment_ids,
               const Tensor& out);
  // dout [B, T, H]: parameter gradients only (the ids need none). dout may be overwritten.
  void backward(Context& ctx, const Pass& pass, const Tensor& dout);

 private:
  const EmbeddingTables* tables_ = nullptr;
  EncoderConfig config_;
  uint32_t site_ = 0;
  LayerNorm norm_;
  Linear project_;
  Tensor ids_, segment_ids_;
  Tensor sum_, normed_, dropped_;  // [B, T, E]; dropped_ only with the projection
  Tensor grad_a_, grad_b_;         // [B, T, E]
  Tensor lookup_workspace_;        // GPU embedding backward (sort keys)
};

}  // namespace electra
