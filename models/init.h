// The official ELECTRA initialisation: weights and embedding tables from a truncated normal
// N(0, 0.02^2) cut at 2 std (tf.truncated_normal), biases 0, LayerNorm gamma 1 and beta 0.
// A pure function of the seed: parameter i of the store draws from Philox stream
// (seed, kInit, step = i), element j from its words (8 j + attempt) * 2 and + 1 (Box-Muller,
// redrawn until inside the cut; the 9th try keeps the clamped value).
#pragma once

#include <cstdint>

#include "models/model_builder.h"

namespace electra {

// A standard-normal-times-`std` draw truncated at 2 std for element `element` of `stream`.
double truncated_normal(const RngStream& stream, uint64_t element, double std);

// Initialises every parameter of `weights` (on any device) and refreshes the compute copy.
void init_electra_weights(Context& ctx, const ModelWeights& weights, uint64_t seed);

}  // namespace electra
