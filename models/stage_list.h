// StageList: the stages of one pre-training micro-batch in a phase of training, each with its
// mode (models/update_stage.h), and the walks over them. The pretrainer keeps one list per
// TrainingPhase; set_phase swaps the list, nothing else changes.
#pragma once

#include <vector>

#include "engine/parameter_store.h"
#include "engine/side_stream.h"
#include "models/update_stage.h"

namespace electra {

class StageList {
 public:
  struct Entry {
    UpdateStage* stage = nullptr;
    StageMode mode = StageMode::kTrain;
  };

  StageList() = default;
  // In declaration order of the stages' parameters (each span begins where the previous ended).
  explicit StageList(std::vector<Entry> entries);

  const std::vector<Entry>& entries() const { return entries_; }

  // Runs the forward of every stage that is not skipped, in order.
  void forward(Context& ctx, const Corruption& c, ForwardContext& saved) const;
  // Walks the list in reverse: a trained stage runs its backward, a frozen one drops its
  // gradients, and each reports its parameters to `ready`; a stage that adds into a later
  // stage's parameters (UpdateStage::adds_into) runs its backward just before that stage's, so
  // that the owner reports them complete. The spans thus arrive from the end of the parameter
  // buffer towards 0.
  // With `side`, the first trained stage whose backward splits (UpdateStage::splits_backward) runs
  // its own part on side's context from the start of the walk, beside the backward of the stages
  // listed after it (the generator's beside the discriminator's); the walk joins the side stream
  // when it reaches that stage and runs its shared part there, so every gradient that two stages
  // add into gets its terms in the order of the serial walk: the same bits. The own part's
  // reports are held until the join (`ready` enqueues work that reads the gradients on ctx's
  // stream) and made there, in their order.
  void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready,
                SideStream* side = nullptr) const;
  // The accumulate_means inputs of the stages whose forward ran, over `defaults`.
  MeanInputs mean_inputs(const Corruption& c, MeanInputs defaults) const;
  // Each such stage's own metric rows, in order.
  void accumulate_metrics(Context& ctx, const Corruption& c, const Tensor& acc) const;
  // Whether `param` (of `store`) belongs to a stage this list does not train.
  bool frozen(const ParameterStore& store, const ParamInfo& param) const;

 private:
  std::vector<Entry> entries_;
};

// The gradients of the parameters in `span` (with their padding rows), one view of the flat
// gradient buffer; `span` must not be empty.
Tensor span_grads(const ParameterStore& store, ParamSpan span);

}  // namespace electra
