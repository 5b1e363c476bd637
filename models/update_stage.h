// UpdateStage: one part of a pre-training micro-batch (models/pretrainer.h), owning its
// parameters, its buffers and its forward and backward. The pretrainer is a list of stages
// (models/stage_list.h) after the corruption (models/masking_stage.h):
//
//   embedding tables   the shared tables, [the generator's own]       (models/tables_stage.h)
//   replacement source generator: mlm (models/generator_stage.h) or unigram (unigram_stage.h)
//   objective          the discriminator-sized model and its loss: electra and electra-15
//                      (objective_electra.h), mlm and replace-mlm (objective_mlm.h),
//                      all-tokens-mlm (objective_all_tokens.h)
//   generator trainer  MLE is the generator stage's own loss; adversarial adds a stage
//                      (models/adversarial_stage.h)
//
// The forward walks the list in order, each stage reading what earlier ones wrote into the
// ForwardContext; the backward walks it in reverse, and each stage reports its parameters to the
// GradientsReady callback when their gradients are final. Stages are listed in the order their
// parameters are declared, so the reports run from the end of the buffer towards 0 (what
// models/grad_sync.h needs) without an order written anywhere else. The one exception is named
// by the stage that makes it: with sharing: all the generator, declared after the discriminator
// whose encoder it reads, adds into that encoder's gradients (adds_into), so its backward runs
// just before the discriminator's, which reports the tied layers complete.
#pragma once

#include <cstdint>

#include "engine/context.h"
#include "engine/device_scalar.h"
#include "kernels/step_scalars.h"
#include "models/discriminator.h"
#include "models/dropout_pass.h"
#include "models/model_builder.h"

namespace electra {

// The corruption of one micro-batch, on the device. ElectraPretrainer::corrupt() returns views
// of the masking stage's buffers; tests build one from fixed values
// (test/models/tiny_pretrainer.h).
struct Corruption {
  Tensor generator_ids;  // i32 [B, T]: the ids with the masked positions changed
  Tensor positions;      // i32 [B, N]
  Tensor original;       // i32 [B, N]: the ids at the positions
  Tensor weights;        // f32 [B, N]: 1 for a used slot, 0 for an empty one
  // Unset in training; set (i32 [B * N]), it replaces the generator's samples.
  Tensor samples;
};

// d loss / d logits of the models' heads: what the backward starts from. Each loss sets the
// gradient of the logits it read; the loss ops write it over those logits, so each is a view of
// a logits buffer (the loss stages hand it on, once). Unset: the loss did not run, and the
// backward refuses it (models/loss_gradient.h).
struct LossGradients {
  Tensor generator;  // [B * N, Vp]: the generator's loss (the adversarial stage rewrites it)
  // binary [B * T]: the electra objectives (all-tokens-mlm: the copy head); mlm: the MLM head
  DiscriminatorGradients discriminator;
};

// What the backward needs from the forward, and what the forward produced.
struct ForwardContext {
  DropoutPass pass;  // the dropout stream: the backward regenerates the masks from it
  Tensor samples;    // i32 [B * N]: the replacements the discriminator saw
  Tensor labels;     // i32 [B, T]: 1 where a token was replaced
  LossGradients dlogits;
};

// The step scalars' loss normalisers (kernels/step_scalars.h), computed once per micro-batch
// before the stages run (ElectraPretrainer::forward), and the losses that read them.
enum LossScale : int {
  kGenScale = 0,    // loss_scale / masked slots: an MLM loss, a mean over the masked slots
  kDiscScale = 1,   // loss_scale x disc_weight / tokens (electra-15: / masked slots): the BCE
  kTokenScale = 2,  // loss_scale / tokens: all-tokens-mlm's MLM loss, a mean over every token
};

// What every stage reads and no stage owns: the micro-batch's input planes (one upload) and the
// step scalars, with the shapes. Declared by the pretrainer before the stages' buffers.
struct UpdateInputs {
  UpdateInputs(ModelBuilder& b, int64_t batch, int64_t seq_len, int64_t slots, int32_t vocab);

  static constexpr int kPlanes = 4;  // ids, segment ids, mask, token weights

  int64_t batch, seq_len, slots;
  int32_t vocab;                                 // V (the padding rows are not sampled)
  Tensor input;                                  // i32 [4, B, T]: the planes below
  Tensor ids, segment_ids, mask, token_weights;  // [B, T] (token weights: f32 [B * T])
  Tensor scalars;                                // StepScalars (kernels/step_scalars.h)

  int64_t tokens() const { return batch * seq_len; }  // B T
  int64_t masked() const { return batch * slots; }    // B N
  // ctx's stream for `purpose` whose step is the step scalars' micro-step.
  RngStream rng(Context& ctx, RngPurpose purpose) const;
  DeviceScalar<float> normaliser(LossScale k) const {
    return DeviceScalar<float>::in(normaliser_at(scalars, k));
  }
};

// What a stage adds to the micro-batch's one accumulate_means (kernels/train_metrics.h; the rows
// are models/metric_rows.h's): the generator's MLM rows and the binary objective's counts. The
// total loss row is their sum, so one op adds both (the f64 sum's bits depend on it).
struct MeanInputs {
  Tensor loss, argmax, labels, weights;  // the generator's masked slots (zero rows without one)
  Tensor counts;                         // the BCE's counts (unset without a BCE)
};

// How a stage takes part in a phase of training (ElectraPretrainer::set_phase): kTrain runs its
// forward and backward; kFrozen its forward (later stages read what it writes) and not its
// backward: drop_gradients() removes what later stages added into its parameters; kSkip neither.
// A stage not trained reports its parameters at once (their gradients are 0).
enum class StageMode : uint8_t { kTrain, kFrozen, kSkip };

class UpdateStage {
 public:
  virtual ~UpdateStage() = default;

  // The parameters this stage declared, [first, end) in declaration order (may be empty).
  ParamSpan span() const { return span_; }

  // Once, after the binding pass: fills constant buffers (default: none).
  virtual void upload_constants(Context& /*ctx*/) {}
  // Reads the corruption and what earlier stages wrote into `saved`; writes its own results
  // (samples, labels, gradients of the logits) there.
  virtual void forward(Context& ctx, const Corruption& c, ForwardContext& saved) = 0;
  // Adds this stage's parameter gradients (x the step scalars' loss scale), reporting spans to
  // `ready` (when set) as they become final; the default reports span() (no backward work).
  virtual void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready);
  // kFrozen: zero what later stages added into this stage's gradients (default: nothing does).
  virtual void drop_gradients(Context& /*ctx*/) {}

  // A stage whose backward splits (default: not) has backward() = backward_own() then
  // backward_shared(), and StageList::backward may run the first on a side stream from the start
  // of the walk, beside the backward of the stages listed after it:
  //   backward_own     writes only this stage's own parameters' gradients and buffers, and reads
  //                    nothing a later stage's backward writes; reports its spans to `ready`;
  //   backward_shared  the gradients it adds into parameters whose gradients other stages add
  //                    into too (the shared embedding tables), run at the stage's place in the
  //                    walk, so that those sums keep the order of a serial backward.
  virtual bool splits_backward() const { return false; }
  virtual void backward_own(Context& /*ctx*/, const ForwardContext& /*saved*/,
                            const GradientsReady& /*ready*/) {}
  virtual void backward_shared(Context& /*ctx*/, const ForwardContext& /*saved*/,
                               const GradientsReady& /*ready*/) {}

  // Its part of the micro-batch's accumulate_means (after its forward ran).
  virtual void mean_inputs(const Corruption& /*c*/, MeanInputs& /*m*/) const {}
  // Its own metric rows, added after accumulate_means (after its forward ran).
  virtual void accumulate_metrics(Context& /*ctx*/, const Corruption& /*c*/,
                                  const Tensor& /*acc*/) const {}

  // Whether this stage's backward adds into parameters `owner` declared and reports (sharing:
  // all, the generator into the discriminator's encoder): the backward walk then runs this
  // stage's backward before the owner's, whatever their places in the list.
  bool adds_into(const UpdateStage& owner) const { return adds_into_ == &owner; }
  void set_adds_into(const UpdateStage& owner) { adds_into_ = &owner; }

 protected:
  // Call from the constructor around the parameter declarations.
  void begin_span(const ModelBuilder& b) { span_ = ParamSpan{b.declared(), b.declared()}; }
  void end_span(const ModelBuilder& b) { span_.end = b.declared(); }

 private:
  ParamSpan span_;
  const UpdateStage* adds_into_ = nullptr;
};

// Reports `span` to `ready` when both are set and the span is not empty.
inline void report(Context& ctx, const GradientsReady& ready, ParamSpan span) {
  if (ready && !span.empty()) ready(ctx, span);
}

}  // namespace electra
