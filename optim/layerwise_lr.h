// Layer-wise learning-rate decay for fine-tuning (ELECTRA paper, appendix): a
// parameter's learning rate is lr x decay^depth, depth counted from the top of the network, so
// the layers closest to the input change least.
//
// Depth of a parameter, for an encoder of L layers (names "<model>/electra.<...>", as the store
// holds them; anything outside "electra." is the task head):
//
//   parameter                                      depth (default)   depth (official_off_by_one)
//   task head (classifier.*, qa_outputs.*, ...)    0                 0
//   electra.encoder.layer.<L-1>.*                  1                 2
//   electra.encoder.layer.<i>.*                    L - i             L + 1 - i
//   electra.encoder.layer.0.*                      L                 L + 1
//   electra.embeddings.*, electra.embeddings_project.*   L + 1       L + 2
//
// The default is the rule as the paper states it: the head at full lr, the top layer one decay
// below it, the embeddings deepest. The official code (google-research/electra,
// model/optimization.py, _get_layer_lrs) gives the embeddings depth 0, layer i depth i + 1 and
// the task head depth L + 2, and multiplies by decay^(L + 2 - depth): there is no layer at
// depth L + 1, so every encoder layer and the embeddings get one extra factor of decay (the top
// layer decay^2). `official_off_by_one` reproduces that exactly, e.g. for matching its results.
//
// Typical decay: 0.8 for Small and Base, 0.9 for Large (configure_finetuning.py). decay = 1
// disables the decay. The factor is the Optimizer's LrMultiplier (optim/optimizer.h).
#pragma once

#include <string>

#include "optim/optimizer.h"

namespace electra {

struct LayerwiseLrDecay {
  double decay = 0.8;  // in (0, 1]
  int layers = 12;     // L, the encoder's layer count
  bool official_off_by_one = false;

  // UserError naming `what` (e.g. the YAML key) unless 0 < decay <= 1 and layers >= 1.
  void validate(const std::string& what) const;
};

// The depth from the top of the parameter `name` (table above). Error for a name under
// "electra." that is neither the embeddings nor an encoder layer below `layers`.
int layerwise_lr_depth(const std::string& name, const LayerwiseLrDecay& config);
// decay^depth.
double layerwise_lr_factor(const std::string& name, const LayerwiseLrDecay& config);
// The Optimizer's per-parameter multiplier; validates the config first.
Optimizer::LrMultiplier layerwise_lr_multiplier(const LayerwiseLrDecay& config);

}  // namespace electra
