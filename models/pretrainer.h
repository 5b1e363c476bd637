// ElectraPretrainer: one replaced-token-detection micro-step (Clark et al. 2020, section 2), as
// a pipeline of values on a planned set of buffers (nothing is allocated after construction):
//
//   host batch --pack_batch (host)--> 4 planes [4, B, T] --one upload--> input()
//   step scalars (device)        -> micro-step, loss scale, loss normalisers (step_scalars())
//   corrupt()                    -> Corruption (models/masking_stage.h)
//   forward(Corruption)          -> the loss normalisers of the micro-batch (normalise), then the
//                                   stage list's forward (models/stage_list.h): ForwardContext
//   backward(ForwardContext)     -> the list in reverse, from the losses' gradients of the logits
//                                   (refused when a loss did not run): parameter gradients +=;
//                                   GradientsReady reports from the end of the buffer towards 0
//   accumulate_metrics           -> the device metrics accumulator (models/metric_rows.h)
//
// The stages (models/update_stage.h) are the embedding tables, the replacement source (the MLM
// generator or unigram sampling), the objective (the discriminator-sized model and its loss:
// options.objective, models/objective.h, docs/OBJECTIVES.md) and, with generator_training:
// adversarial, the REINFORCE stage. They are listed in the order their parameters are declared,
// so the backward's reports need no order of their own: [the generator's own tables: gdes],
// the discriminator's tables, [the generator's own tables: none], generator (projection, layers,
// head), discriminator (projection, layers, heads), [the adversarial baseline]. sharing: all
// declares the discriminator (whose encoder is the generator's too) before the generator's head;
// the generator stage adds into the discriminator's encoder, so its backward runs just before
// the discriminator's, which reports each tied layer once, complete.
// Two-stage training (options.training, docs/OBJECTIVES.md) keeps a list per phase (set_phase()):
// TrainingPhase::kGenerator trains the tables and the generator and skips the discriminator;
// kDiscriminator runs the frozen generator's forward (it still samples the replacements) and
// trains the discriminator; a stage not trained reports its parameters at once (gradients 0).
// Every random draw is keyed by (seed, purpose, micro_step, rank), so a step is reproducible on
// CPU and GPU and after a resume. No kernel of the pipeline takes a per-step value from the host:
// the micro-step, the masking rate and the loss scales are read from the step scalars in device
// memory, so the micro-step can be replayed from a CUDA graph.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/reinforce.h"
#include "models/masking_stage.h"
#include "models/objective.h"
#include "models/update_stage.h"

namespace electra {

class SideStream;  // engine/side_stream.h

// The variant (objective, generator, sharing, generator training, training: models/objective.h)
// and the shapes and numbers of one pretrainer; a pretrain config gives them
// (PretrainConfig::pretrainer_options, train/pretrain_config.h).
struct PretrainOptions : PretrainVariant {
  int64_t batch = 128;  // sequences per micro-batch
  int64_t seq_len = 128;
  float mask_prob = 0.15f;
  float mask_token_prob = 0.85f;   // a chosen position becomes [MASK], else keeps its token
  float random_token_prob = 0.0f;  // ... or a random token (BERT's 0.1; kernels/masking.h)
  float temperature = 1.0f;        // of the generator's sample
  float disc_weight = 50.0f;       // lambda
  SpecialTokens tokens;
  // The generator's logits GEMM runs over the vocabulary padded to a multiple of this (zero
  // padding rows in the word table and the output bias, masked out of the softmax); 1 turns the
  // padding off (tests compare both).
  int64_t vocab_multiple = 128;
  // The generator's backward on a second CUDA stream, beside the discriminator's (the stage list's
  // split backward, models/stage_list.h): the same bits; on the CPU its own part runs first, in
  // program order. train.overlap_generator in a config.
  bool overlap_generator = false;
};

// Why `sharing` cannot be built for this model and objective, or "" when it can (the pretrainer
// and the config refuse with it): all and gdes need a generator model (not objective: mlm nor
// generator: unigram), all a generator of the discriminator's size (hidden, heads, FFN; the
// message names the model key and the two sizes).
std::string sharing_problem(const ElectraConfig& config, Sharing sharing, Objective objective,
                            GeneratorKind generator);

// One micro-batch on the host: token and segment ids, [B * T] each, padding = tokens.pad.
struct HostBatch {
  std::vector<int32_t> ids;
  std::vector<int32_t> segment_ids;
};

struct StepMetrics {
  double gen_loss = 0;        // MLM cross-entropy, mean over masked slots
  double gen_accuracy = 0;    // argmax == original over masked slots
  double disc_loss = 0;       // BCE, mean over non-pad tokens (before disc_weight)
  double disc_accuracy = 0;   // over non-pad tokens
  double disc_precision = 0;  // of the "replaced" prediction
  double disc_recall = 0;
  double replaced_fraction = 0;  // non-pad tokens whose sample differs from the original
  double mlm_loss = 0;           // the discriminator-sized model's MLM loss (the MLM objectives)
  double mlm_accuracy = 0;       // its prediction == original, over the same positions
  double reward = 0;             // adversarial: mean reward of the samples (kernels/reinforce.h)
  double baseline_loss = 0;      // adversarial: mean cross-entropy loss of the baseline
  // gen_loss + disc_weight * disc_loss + mlm_loss + baseline_loss (adversarial: gen_loss is
  // still the generator's MLM loss, reported, not trained)
  double total_loss = 0;
  double masked = 0;  // masked slots in the batch
  double tokens = 0;  // non-pad tokens in the batch
};

// The means over the micro-steps accumulated in `acc` (kTrainMetrics values read back from the
// device accumulator, models/metric_rows.h); masked and tokens are totals.
StepMetrics step_metrics(const std::vector<double>& acc);

// The device memory of a pretrainer, from the planning pass alone.
struct PretrainMemory {
  int64_t parameter_count = 0;
  size_t parameters = 0;  // master weights (+ the bf16 compute copy on a bf16 run)
  size_t gradients = 0;
  size_t activations = 0;  // the activation arena: every buffer of a micro-step
};

class ElectraPretrainer {
 public:
  // What a pretrainer of this shape takes on `device` in `precision`; allocates nothing (works
  // for a CUDA device in a CPU-only build).
  static PretrainMemory plan_memory(const ElectraConfig& config, const PretrainOptions& options,
                                    Device device, Precision precision);

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

  // --- Input. The device buffer of one micro-batch: i32 [4, B, T] holding the ids, the segment
  // ids, the attention mask (id != pad) and the token weights (f32 bits: 1 for a non-pad token).
  const Tensor& input() const { return input_; }
  // Host preparation: validates `batch` (UserError naming the sequence and position of a bad id,
  // or a batch without a non-pad or a maskable token) and writes the four planes into `planes`
  // (4 * B * T values: the staging buffer of the upload into input()).
  void pack_batch(const HostBatch& batch, int32_t* planes) const;

  // --- The step scalars (kernels/step_scalars.h): the micro-step that keys every random draw,
  // the masking rate, the loss scale and the loss normalisers, in device memory; the pipeline's
  // kernels read them there. The Trainer advances the micro-step (and the rate of a masking-rate
  // schedule) with next_micro_step; set_step uploads a micro-step, a loss scale and mask_prob()
  // (setup, tests and tools; the constructor sets 0, 1 and options().mask_prob).
  const Tensor& step_scalars() const;
  void set_step(Context& ctx, uint32_t micro_step, float loss_scale);
  // ctx's stream for `purpose` whose step is the block's micro-step.
  RngStream rng(Context& ctx, RngPurpose purpose) const;
  // The masking rate set_step uploads (tests and tools). At most options().mask_prob, which
  // sizes the masked slots.
  void set_mask_prob(float p);
  float mask_prob() const { return mask_prob_; }

  // --- generator: unigram. The token counts the replacements are drawn from ([V], counted over
  // the training data once per run and saved with its checkpoints); set before the first forward.
  void set_unigram_counts(Context& ctx, const std::vector<uint64_t>& counts);
  const std::vector<uint64_t>& unigram_counts() const;

  // --- Two-stage training (options().training == kTwoStage; docs/OBJECTIVES.md). The phase (a
  // stage of the paper's two-stage training) the next forward and backward run (kJoint until
  // set; a host value read when the pipeline is enqueued: a CUDA graph captured in one phase
  // must not be replayed in another).
  void set_phase(TrainingPhase phase);
  TrainingPhase phase() const { return phase_; }
  // The parameters `phase` leaves untrained (Optimizer::set_frozen): the discriminator's in
  // kGenerator (with sharing: none its embedding tables too; shared tables train with the
  // generator), the generator's in kDiscriminator, its embedding tables included (shared or its
  // own: the generator is wholly frozen); none in kJoint.
  bool frozen_in(TrainingPhase phase, const ParamInfo& param) const;
  // The switch between the phases: copies every generator encoder parameter ("generator/electra.*":
  // the embedding projection, every layer, with sharing: none the tables) over its discriminator
  // namesake ("discriminator/electra.*"); the discriminator's head keeps its values. Error unless
  // every such parameter has a namesake of the same shape.
  void init_discriminator_from_generator(Context& ctx);

  // --- The pipeline (see the top of this file); the block's loss_scale multiplies the gradients
  // (1 / accumulation steps when accumulating); the metrics stay unscaled.
  Corruption corrupt(Context& ctx);
  ForwardContext forward(Context& ctx, const Corruption& corruption);
  // set_step(ctx, micro_step, loss_scale), then forward (tests and tools).
  ForwardContext forward(Context& ctx, const Corruption& corruption, uint32_t micro_step,
                         float loss_scale = 1.0f);
  void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready = {});
  // Adds this micro-step's metrics to `acc` (f64 [kTrainMetrics], models/metric_rows.h).
  void accumulate_metrics(Context& ctx, const Corruption& corruption, const Tensor& acc);

  // The stages one by one (forward() runs the stage list; tests and tools read the logits in
  // between, before the losses overwrite them with their gradients). generator_loss (the MLM
  // generator's loss, or the unigram draw) first computes the loss normalisers of the micro-batch
  // into the step scalars (normalise; forward() does so before its first stage), which the later
  // losses read too. The losses record what they produce in `saved` (its pass is the forward's):
  // generator_loss the samples and the generator's dlogits, discriminator_loss and mlm_loss the
  // discriminator's.
  const Tensor& generator_forward(Context& ctx, const Corruption& corruption,
                                  const DropoutPass& pass);
  void generator_loss(Context& ctx, const Corruption& corruption, ForwardContext& saved);
  Tensor discriminator_forward(Context& ctx, const Corruption& corruption, const Tensor& samples,
                               const DropoutPass& pass);
  void discriminator_loss(Context& ctx, const Corruption& corruption, ForwardContext& saved);
  // The MLM objectives: the discriminator-sized model's MLM loss (at the masked positions, or at
  // every token with the copy mechanism) and its dlogits.
  void mlm_loss(Context& ctx, const Corruption& corruption, ForwardContext& saved);
  // generator_training: adversarial, after discriminator_loss: the baseline's forward and the
  // reinforce op on saved.samples (those the discriminator saw); the generator's dlogits become
  // the policy gradient in place.
  void adversarial_loss(Context& ctx, const Corruption& corruption, const ForwardContext& saved);
  // Its per-slot outputs [B * N] (reward, advantage, log p of the sample, baseline loss).
  const ReinforceSlots& adversarial_slots() const;
  // The discriminator's per-token loss [B * T] from discriminator_loss (the rewards' source).
  const Tensor& discriminator_token_loss() const;
  const Tensor& labels() const;

  // --- Conveniences for tests and tools (each synchronises).
  // Stages, uploads and runs corrupt, forward and backward on a host batch.
  void step(Context& ctx, const HostBatch& batch, uint32_t micro_step, float loss_scale = 1.0f,
            const GradientsReady& ready = {});
  // The metrics of the last forward on `corruption` (reads them back).
  StepMetrics metrics(Context& ctx, const Corruption& corruption);
  // The same for the corruption of the last forward() (it must still exist).
  StepMetrics metrics(Context& ctx) { return metrics(ctx, last_corruption_); }

  struct Network;  // the stages, their lists and every per-step buffer (pretrain_network.h)
  // The last forward's corruption and context (views).
  const Corruption& last_corruption() const { return last_corruption_; }
  const ForwardContext& last_forward() const { return last_forward_; }

 private:
  // loss_normalisers of the corruption's slot weights and the token weights into the block.
  void normalise(Context& ctx, const Corruption& corruption);

  ElectraConfig config_;
  PretrainOptions options_;
  int64_t slots_ = 0;
  float mask_prob_ = 0;
  ModelWeights weights_;
  Arena params_;
  Arena grads_;
  Arena acts_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<SideStream> side_;  // options.overlap_generator
  Tensor input_;                      // i32 [4, B, T]
  TrainingPhase phase_ = TrainingPhase::kJoint;
  std::vector<int32_t> step_planes_;  // step()'s host staging
  Corruption last_corruption_;
  ForwardContext last_forward_;
};

}  // namespace electra
