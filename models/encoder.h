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
//
// Weight gradients in groups of layers: the backward runs the layers' input gradients (their dX
// GEMMs, attention, LayerNorms, GELU and the biases they sum) layer by layer, and leaves the
// gradients of each linear's output in the layer's slot of the stacks (models/encoder_stacks.h).
// The layers are cut into groups of G = config.weight_grad_group (0: all L; the top group holds
// the L mod G remainder): when the backward has passed a group's lowest layer, the weight
// gradients of its four linears (Wqkv, Wo, Wi, Wo of the FFN) run as one strided-batched GEMM each
// and the QKV bias gradient as one grouped launch (models/linear_stack.h), then the group's
// layers are reported ready (a layer only after its batched calls are queued). G = L is the
// fewest launches (ELECTRA-Small: 4 GEMMs + 1 kernel an encoder instead of 48 + 12) but keeps 9H
// values a token for each of the L layers and reports every layer at the end of the encoder's
// backward, so a data-parallel all-reduce overlaps less of it; G = 1 keeps one layer's worth and
// reports each layer as before. The CPU computes the same bits at any G.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/embeddings.h"
#include "models/encoder_scratch.h"
#include "models/encoder_stacks.h"
#include "models/feed_forward.h"
#include "models/linear_stack.h"
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
  // backward_layers() then backward_tables().
  void backward(Context& ctx, const DropoutPass& pass, const GradientsReady& ready = {});
  // The layers and the embedding projection, reporting their spans: this encoder's own gradients.
  void backward_layers(Context& ctx, const DropoutPass& pass, const GradientsReady& ready = {});
  // The embedding LayerNorm and lookup, into the (shared) tables' gradients.
  void backward_tables(Context& ctx, const DropoutPass& pass);

  const EncoderConfig& config() const { return config_; }

 private:
  struct Layer {
    SelfAttention attention;
    FeedForward feed_forward;
  };

  EncoderConfig config_;
  EncoderScratch scratch_;
  EncoderStacks stacks_;
  Embeddings embeddings_;
  std::vector<Layer> layers_;
  std::vector<Tensor> hidden_;              // L + 1 of [B, T, H]: views of stacks_.hidden
  std::vector<Tensor> mid_;                 // L of [B, T, H]: views of stacks_.mid
  std::vector<LinearStack> linear_stacks_;  // FFN output, FFN input, attention output, QKV
  ParamSpan embeddings_span_;
  std::vector<ParamSpan> layer_spans_;
};

}  // namespace electra
