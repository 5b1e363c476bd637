// ElectraPretrainer: one replaced-token-detection training step (DESIGN section 4), forward and
// backward, on a planned set of buffers (nothing is allocated after construction).
//
//   mask_tokens(ids)                     -> generator ids, positions [B, N], originals, weights
//   generator.forward                    -> logits at the masked positions [B * N, Vp]
//   softmax_xent(logits, originals)      -> MLM loss (mean over masked slots), dlogits in place,
//                                           Gumbel-max samples (no gradient through them)
//   replace_tokens(ids, samples)         -> discriminator ids, labels (sample != original)
//   discriminator.forward                -> logits [B * T]
//   disc_head(logits, labels, not-pad)   -> BCE (mean over non-pad tokens) x disc_weight, dlogits
//   discriminator.backward, generator.backward (both add into the shared embedding gradients)
//
// Total loss = MLM + disc_weight * BCE. Every random draw is keyed by (seed, purpose, micro_step,
// rank), so a step is reproducible on CPU and GPU and after a resume.
//
// Gradient hook (data-parallel training, models/grad_sync.h): during the backward the pretrainer
// reports element offsets of the flat gradient buffer from which every gradient is final for the
// step. Parameters are declared shared tables, generator (projection, layers, head),
// discriminator (projection, layers, head), and the backward runs discriminator head, layers
// L-1..0, projection, then generator head, layers, projection, and last the shared tables (both
// models add into them): the final region grows from the end of the buffer towards 0. Reported:
// after each encoder layer and each encoder's embeddings, then 0 at the end.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "models/discriminator.h"
#include "models/generator.h"

namespace electra {

struct SpecialTokens {
  int32_t pad = 0;
  int32_t cls = 101;
  int32_t sep = 102;
  int32_t mask = 103;
};

struct PretrainOptions {
  int64_t batch = 128;  // sequences per micro-batch
  int64_t seq_len = 128;
  float mask_prob = 0.15f;
  float mask_token_prob = 0.85f;  // a chosen position becomes [MASK], else keeps its token
  float temperature = 1.0f;       // of the Gumbel-max sampling
  float disc_weight = 50.0f;      // lambda
  SpecialTokens tokens;
  // The generator's logits GEMM runs over the vocabulary padded to a multiple of this (zero
  // padding rows in the word table and the output bias, masked out of the softmax); 1 turns the
  // padding off (tests compare both).
  int64_t vocab_multiple = 128;
  bool keep_logits = false;  // copy both models' logits before the losses overwrite them (tests)
};

// One micro-batch on the host: token and segment ids, [B * T] each, padding = tokens.pad.
struct HostBatch {
  std::vector<int32_t> ids;
  std::vector<int32_t> segment_ids;
};

// The test entry's replacement for masking and sampling: what they would have produced.
struct FixedCorruption {
  std::vector<int32_t> generator_ids;  // [B * T]: ids with the masked positions changed
  std::vector<int32_t> positions;      // [B * N]
  std::vector<float> weights;          // [B * N]: 1 for a used slot, 0 for an empty one
  std::vector<int32_t> samples;        // [B * N]: the generator's "samples"
};

struct StepMetrics {
  double gen_loss = 0;        // MLM cross-entropy, mean over masked slots
  double gen_accuracy = 0;    // argmax == original over masked slots
  double disc_loss = 0;       // BCE, mean over non-pad tokens (before disc_weight)
  double disc_accuracy = 0;   // over non-pad tokens
  double disc_precision = 0;  // of the "replaced" prediction
  double disc_recall = 0;
  double replaced_fraction = 0;  // non-pad tokens whose sample differs from the original
  double total_loss = 0;         // gen_loss + disc_weight * disc_loss
  double masked = 0;             // masked slots in the batch
  double tokens = 0;             // non-pad tokens in the batch
};

class ElectraPretrainer {
 public:
  // Plans every buffer for (options.batch, options.seq_len) on ctx's device in ctx's precision
  // (f64 for gradient checks, f32, bf16 on the GPU). Parameters are uninitialised: call
  // init_weights() or load a checkpoint.
  ElectraPretrainer(Context& ctx, const ElectraConfig& config, const PretrainOptions& options);
  ~ElectraPretrainer();
  ElectraPretrainer(const ElectraPretrainer&) = delete;
  ElectraPretrainer& operator=(const ElectraPretrainer&) = delete;

  const ElectraConfig& config() const { return config_; }
  const PretrainOptions& options() const { return options_; }
  int64_t slots() const { return slots_; }  // N, masked slots per sequence
  const ParameterStore& store() const { return weights_.store; }
  ModelWeights& weights() { return weights_; }
  const Arena& activation_arena() const { return acts_; }

  // Truncated normal (std 0.02, cut at 2 std) weights, zero biases, LayerNorm gamma 1 beta 0, as
  // the official code; a pure function of the seed (Philox, purpose kInit).
  void init_weights(Context& ctx, uint64_t seed);
  void zero_grads(Context& ctx);

  // One micro-batch forward and backward; gradients accumulate (+=) as loss_scale times the
  // gradient of the total loss (1 / accumulation steps when accumulating, times S under loss
  // scaling: optim/loss_scaler.h; metrics() reports the losses unscaled). micro_step keys
  // masking, sampling and dropout.
  void step(Context& ctx, const HostBatch& batch, uint32_t micro_step, float loss_scale = 1.0f);
  // The test entry: as step(), with masking and sampling replaced by `fixed`.
  void step_fixed(Context& ctx, const HostBatch& batch, const FixedCorruption& fixed,
                  uint32_t micro_step, float loss_scale = 1.0f);

  // Called during each later step's backward (see the top of this file); an empty function
  // removes it.
  using GradientHook = std::function<void(Context& ctx, int64_t first_final)>;
  void set_gradient_hook(GradientHook hook) { gradient_hook_ = std::move(hook); }

  // The last step's metrics (copies a few small buffers to the host: synchronises).
  StepMetrics metrics(Context& ctx) const;
  // With options.keep_logits: the last step's generator logits [B * N, V] (without the padding
  // columns) and discriminator logits [B * T].
  const Tensor& generator_logits() const { return kept_gen_logits_; }
  const Tensor& discriminator_logits() const { return kept_disc_logits_; }
  // The last step's corruption: generator input ids [B, T], positions and weights [B, N],
  // samples [B * N]; and the discriminator labels [B, T].
  FixedCorruption corruption(Context& ctx) const;
  const Tensor& labels() const;

 private:
  struct Parts;
  void run(Context& ctx, const HostBatch& batch, const FixedCorruption* fixed, uint32_t micro_step,
           float loss_scale);
  void stage_batch(Context& ctx, const HostBatch& batch);
  double planned_masked_slots(const HostBatch& batch) const;
  void plan_gradient_frontiers();
  void keep_generator_logits(Context& ctx);

  ElectraConfig config_;
  PretrainOptions options_;
  int64_t slots_ = 0;
  ModelWeights weights_;
  Arena params_;
  Arena grads_;
  Arena acts_;
  std::unique_ptr<Parts> parts_;
  GradientHook gradient_hook_;
  // Per encoder: the first final offset after layer l's backward ([l]) and after the embeddings
  // (back()).
  std::vector<int64_t> generator_frontiers_, discriminator_frontiers_;
  Tensor kept_gen_logits_, kept_disc_logits_;
  // Host staging, sized at construction.
  std::vector<int32_t> host_mask_;
  std::vector<float> host_token_weights_;
  std::vector<int32_t> host_original_;
  double masked_slots_ = 0, tokens_ = 0;
};

}  // namespace electra
