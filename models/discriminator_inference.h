// Forward-only discriminator for a user's own text (`electra encode`, `electra score`): the
// encoder's hidden states of any layer and, with the replaced-token head
// (discriminator_predictions.*, HF's ElectraForPreTraining), the logit that each token was
// replaced. No dropout; buffers planned once for (batch, seq_len) as ElectraFinetuner does; the
// weights come from a model directory (a pre-training checkpoint's discriminator/, an HF ELECTRA
// directory, or, for the encoder alone, a fine-tuned checkpoint whose head is skipped).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/encoder.h"

namespace electra {

class DiscriminatorInference {
 public:
  DiscriminatorInference(Context& ctx, const EncoderConfig& config, int64_t batch, int64_t seq_len,
                         bool with_head);
  ~DiscriminatorInference();
  DiscriminatorInference(const DiscriminatorInference&) = delete;
  DiscriminatorInference& operator=(const DiscriminatorInference&) = delete;

  // Validates and loads model_dir (models/hf_checkpoint.h); UserError naming the file otherwise
  // (e.g. a fine-tuned checkpoint given where the replaced-token head is needed).
  void load(Context& ctx, const std::string& model_dir);

  // One batch: ids and segment ids [B * T] (pad_id marks padding, masked out of attention).
  void forward(Context& ctx, const std::vector<int32_t>& ids,
               const std::vector<int32_t>& segment_ids, int32_t pad_id);
  // After forward(): hidden states [B, T, H] of layer l in [0, L] (0: the embeddings), as floats.
  std::vector<float> hidden(Context& ctx, int layer) const;
  // After forward() with the head: the replaced-token logits [B * T].
  std::vector<float> logits(Context& ctx) const;

  const EncoderConfig& config() const { return config_; }
  int64_t batch() const { return batch_; }
  int64_t seq_len() const { return seq_len_; }

 private:
  struct Network;  // the layers and their buffers, declared through a ModelBuilder (.cpp)
  EncoderConfig config_;
  int64_t batch_, seq_len_;
  bool with_head_;
  ModelWeights weights_;
  Arena params_, grads_, acts_;
  std::unique_ptr<Network> network_;
  std::vector<int32_t> host_mask_;
};

}  // namespace electra
