// Encoder: embeddings (with the optional projection) and L BERT post-LN transformer layers,
// HF's ElectraModel. Layer l maps hidden[l] -> attention output mid[l] -> hidden[l + 1]; all of
// them are kept for the backward.
//
// Backward protocol: the caller writes (or accumulates into) grad_output() the gradient of the
// last hidden state, then calls backward(); parameter gradients accumulate (+=), the shared
// embedding tables included. When `ready` is set, backward reports the span of each layer's
// parameters once its gradients are final (layer L - 1 down to 0), then the span of the
// embeddings' own parameters (the projection, if any; not the shared tables, which may still
// receive the other model's gradient): data-parallel training starts its gradient all-reduce
// on them (models/grad_sync.h).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/embeddings.h"
#include "models/encoder_scratch.h"
#include "models/feed_forward.h"
#include "models/self_attention.h"

namespace electra {

class Encoder {
 public:
  // `prefix` is "<model>/electra."; the tables are shared with the other model.
  Encoder(ModelBuilder& builder, const std::string& prefix, const EncoderConfig& config,
          const EmbeddingTables& tables, int64_t batch, int64_t seq_len, DropoutSites sites);
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  // ids, segment_ids, mask i32 [B, T]; kept as views until the backward.
  void forward(Context& ctx, const DropoutPass& pass, const Tensor& ids, const Tensor& segment_ids,
               const Tensor& mask);
  const Tensor& output() const { return hidden_.back(); }  // [B, T, H]
  // hidden(0): the embeddings' output, hidden(l): layer l's (HF's hidden_states[l]), l <= L.
  const Tensor& hidden(int l) const { return hidden_.at(static_cast<size_t>(l)); }
  const Tensor& grad_output() const { return scratch_.residual; }
  void backward(Context& ctx, const DropoutPass& pass, const GradientsReady& ready = {});

  const EncoderConfig& config() const { return config_; }

 private:
  struct Layer {
    SelfAttention attention;
    FeedForward feed_forward;
  };

  EncoderConfig config_;
  EncoderScratch scratch_;
  Embeddings embeddings_;
  std::vector<Layer> layers_;
  std::vector<Tensor> hidden_;  // L + 1 of [B, T, H]
  std::vector<Tensor> mid_;     // L of [B, T, H]
  ParamSpan embeddings_span_;
  std::vector<ParamSpan> layer_spans_;
};

}  // namespace electra
