// FLOPs of ELECTRA pre-training, counted exactly as the official google-research/electra
// flops_computation.py does (paper Appendix E), so that our totals reproduce the paper's:
//   - an operation is a mathematical operation (an exp counts 1); a matmul of a vector by an
//     m x n matrix counts 2mn;
//   - the backward pass costs the same as the forward pass (train = 2 x forward);
//   - embedding lookups are dense (a one-hot vector times the table: 2 x E x rows);
//   - per-element constants: dropout 4, layernorm 5, GELU 8, softmax 5.
// Per sequence of s tokens, with h hidden, i FFN, a heads, E embedding size, V vocabulary:
//   block      = s * (6h^2 + 3h + 2hs + 5as + 4as + as + 2hs + 2h^2 + h + 4h + h + 5
//                     + 2hi + 8i + i + 2hi + h + 4h + h + 5h)
//                (the attention-output layernorm counts 5, not 5h: the official script's
//                 constant, kept so that the totals match it)
//   embeddings = s * (2EV + 2E(s + types) + 2E + 5E + 4E [+ 2hE + h when E != h])
//   MLM head   = m * (2EV + 2hE + E + 8E + 5E + 5V + 2V)        at m masked positions
//   disc head  = s * (2h^2 + h + 8h + 2h)
// The generator is the encoder of ElectraConfig::generator() (same E: tied embeddings) with the
// MLM head; the discriminator has the binary head. Both encoders run their own embeddings.
// Per objective (models/objective.h), what the update runs:
//   electra, electra-15  generator + discriminator with the binary head (electra-15 changes only
//                        which tokens the loss weights, not what is computed)
//   mlm                  no generator; the discriminator-sized encoder with the MLM head at the
//                        m masked positions
//   replace-mlm          generator + the discriminator-sized encoder with the MLM head at m
//   all-tokens-mlm       generator + the discriminator-sized encoder with the MLM head at all s
//                        tokens, the binary head (the copy logit) at all s tokens, and the copy
//                        mechanism at all s tokens:
//   copy       = s * (4 + 3)   sigmoid of the copy logit (negate, exp, add 1, divide) and the
//                              mixture D [v = x] + (1 - D) p(x) at the target (1 - D, multiply,
//                              add)
// generator_training: adversarial adds, per masked position, the baseline's probe w . h_G + c
// (2h + 1), its sigmoid (4) and the policy gradient's rewrite of the generator's V logits (a
// multiply and an add each: 2V):
//   adversarial = m * (2h + 1 + 4 + 2V)    (generator sizes; counted in the generator's forward,
//                                           so the convention doubles it like the rest)
// With `generator: unigram` (GeneratorKind::kUnigram) no generator runs: its forward is 0 (the
// draw from the counts is not a model and is not counted). `sharing:` changes nothing here: both
// encoders run their own embeddings in every variant.
// Two-stage training (its phases: TrainingPhase, models/objective.h) counts what each stage runs:
// the generator stage the generator's forward and backward (no discriminator); the discriminator
// stage the generator's forward (it samples, it is not trained) and the discriminator's forward
// and backward.
// The official script puts the MLM head at output_frac x s positions with output_frac = 0.15625
// whatever the masking rate (kOfficialOutputFrac); train_flops() uses it.
#pragma once

#include <cstdint>

#include "models/electra_config.h"
#include "models/objective.h"

namespace electra {

constexpr double kOfficialOutputFrac = 0.15625;

// Forward FLOPs of one sequence, by part (see the formulas above).
double encoder_block_flops(const EncoderConfig& enc, int64_t seq_len);
double embedding_flops(const EncoderConfig& enc, int64_t seq_len);
double mlm_head_flops(const EncoderConfig& enc, double masked_per_seq);
double disc_head_flops(const EncoderConfig& enc, int64_t seq_len);
double copy_flops(int64_t seq_len);  // all-tokens-mlm's copy mechanism
double adversarial_flops(const EncoderConfig& enc, double masked_per_seq);  // at m positions

// FLOPs of one training step (one optimizer update over `batch` sequences).
struct StepFlops {
  double generator_forward = 0;      // 0 for mlm (no generator)
  double discriminator_forward = 0;  // the discriminator-sized model with its objective's heads
  bool generator_trained = true;     // false: no generator backward (two-stage, stage 2)

  double forward() const { return generator_forward + discriminator_forward; }
  // The official convention: a backward costs its forward.
  double generator_backward() const { return generator_trained ? generator_forward : 0; }
  double backward() const { return generator_backward() + discriminator_forward; }
  double generator() const { return generator_forward + generator_backward(); }
  double discriminator() const { return 2 * discriminator_forward; }
  double total() const { return forward() + backward(); }
};

// masked_per_seq: positions per sequence that go through the generator's MLM head (the official
// script: kOfficialOutputFrac * seq_len; our masking: the number of masked slots); the MLM head of
// mlm and replace-mlm runs at as many.
StepFlops step_flops(const ElectraConfig& cfg, int64_t batch, int64_t seq_len,
                     double masked_per_seq, Objective objective = Objective::kElectra,
                     GeneratorKind generator = GeneratorKind::kMlm,
                     GeneratorTraining training = GeneratorTraining::kMle);

// What `phase` of a two-stage run computes of the joint update `joint` (see above); kJoint
// returns it unchanged.
StepFlops phase_flops(StepFlops joint, TrainingPhase phase);

// Total pre-training FLOPs with the official script's conventions (output_frac 0.15625):
// steps x step_flops(cfg, batch, seq_len, 0.15625 * seq_len, objective).total().
double train_flops(const ElectraConfig& cfg, int64_t batch, int64_t seq_len, int64_t steps,
                   Objective objective = Objective::kElectra);

}  // namespace electra
