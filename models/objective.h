// The pre-training objectives of the paper's Table 5 (Clark et al. 2020, section 3.2), as
// different wirings of the same layers and loss ops (docs/OBJECTIVES.md gives the formulas):
//
//   objective       generator   discriminator-sized model           loss
//   electra         MLM         binary head on all tokens           MLM_G + lambda BCE(all tokens)
//   electra-15      MLM         binary head, masked positions only  MLM_G + lambda BCE(masked)
//   mlm             none        MLM head at the masked positions    MLM (BERT corruption)
//   replace-mlm     MLM         MLM head at the masked positions    MLM_G + MLM (input: samples)
//   all-tokens-mlm  MLM         MLM head + copy head on all tokens  MLM_G + copy-MLM (all tokens)
//
// "The" model, the one fine-tuning starts from, is always the discriminator-sized encoder: it is
// stored under "discriminator/" and saved as the checkpoint's discriminator/ directory (an HF
// ElectraForMaskedLM for the three MLM objectives, with its generator_predictions head).
#pragma once

#include <string>

namespace electra {

enum class Objective : uint8_t { kElectra, kElectra15, kMlm, kReplaceMlm, kAllTokensMlm };

// Which parts an objective builds and runs.
struct ObjectiveWiring {
  bool generator = true;         // the small MLM generator that samples replacements
  bool binary_head = true;       // discriminator_predictions (replaced-token logit; copy logit)
  bool mlm_head = false;         // generator_predictions on the discriminator-sized encoder
  bool masked_only = false;      // electra-15: the binary loss covers the masked positions only
  bool all_tokens = false;       // all-tokens-mlm: the MLM head predicts every input token
  bool bert_corruption = false;  // mlm: 80% [MASK], 10% random token, 10% kept
};

ObjectiveWiring objective_wiring(Objective objective);
const char* objective_name(Objective objective);
// "electra" | "electra-15" | "mlm" | "replace-mlm" | "all-tokens-mlm"; false for anything else.
bool parse_objective(const std::string& name, Objective& out);
// The accepted names, "electra|electra-15|...", for messages.
const char* objective_names();

// Where the replacements come from (`generator:` in the pretrain config; docs/OBJECTIVES.md):
// kMlm, the small MLM generator trained with the model (the default), or kUnigram, a draw from
// the unigram distribution of the training data's tokens (the paper's Figure 3 "unigram
// generator": nothing is trained for it). Applies to the objectives with a generator.
enum class GeneratorKind : uint8_t { kMlm, kUnigram };
const char* generator_kind_name(GeneratorKind kind);  // "mlm" | "unigram"

// What the generator and the discriminator share (`sharing:`, Clark et al. 2020 section 3.2;
// docs/OBJECTIVES.md gives the gradients):
//   kEmbeddings  the token, position and segment tables and the embedding LayerNorm (default);
//   kNone        nothing (the generator has tables of its own, "generator/electra.embeddings.*");
//   kAll         every encoder weight: the tables, the embedding projection and every layer (the
//                two models must be of one size); each model keeps its head;
//   kGdes        DeBERTaV3's gradient-disentangled embedding sharing: the generator has tables of
//                its own; the discriminator's token, position and segment tables are
//                sg(generator's) + a residual of its own (initialised to 0), its LayerNorm its own.
enum class Sharing : uint8_t { kEmbeddings, kNone, kAll, kGdes };
const char* sharing_name(Sharing sharing);  // "embeddings" | "none" | "all" | "gdes"

// How the MLM generator learns (`generator_training:`, docs/OBJECTIVES.md): kMle, maximum
// likelihood of the original tokens (the default; the paper's main setting), or kAdversarial,
// REINFORCE on the discriminator's loss at its samples with a learned baseline (Clark et al.
// 2020, Appendix F). Adversarial needs the MLM generator and the binary discriminator (electra,
// electra-15).
enum class GeneratorTraining : uint8_t { kMle, kAdversarial };
const char* generator_training_name(GeneratorTraining training);  // "mle" | "adversarial"
// Whether `objective` with `generator` can be trained adversarially (an MLM generator whose
// samples a binary discriminator judges).
bool adversarial_applies(Objective objective, GeneratorKind generator);

// How the two models are trained (`training:`, paper Figure 3 right; docs/OBJECTIVES.md):
// kJoint, both at once on MLM + lambda BCE (the default); kTwoStage, the generator alone with
// MLM for two_stage.generator_steps updates, then the discriminator, initialised from the
// generator's encoder, with lambda BCE while the generator is frozen.
enum class Training : uint8_t { kJoint, kTwoStage };
const char* training_name(Training training);  // "joint" | "two-stage"

// A pre-training variant: the five choices above. The pretrain config (train/pretrain_config.h,
// whose top-level keys they are) and the pretrainer's options (models/pretrainer.h) are both
// one, so a choice is declared here once and the config hands it to the model whole.
struct PretrainVariant {
  Objective objective = Objective::kElectra;
  // kUnigram: the replacements are drawn from the data's unigram distribution
  // (kernels/unigram_sample.h) and no generator is built (needs an objective with a generator).
  GeneratorKind generator = GeneratorKind::kMlm;
  // kNone: the generator reads embedding tables of its own (declared right after the shared
  // ones; its backward reports them after its projection). kAll: the generator's encoder is the
  // discriminator's (one size; only its head is its own). kGdes: the generator's tables are its
  // own, the discriminator reads them with a stop-gradient plus residuals (models/embeddings.h).
  Sharing sharing = Sharing::kEmbeddings;
  // kAdversarial: REINFORCE instead of maximum likelihood (needs an MLM generator, a binary
  // discriminator and temperature 1: the gradient is that of log softmax at T = 1).
  GeneratorTraining generator_training = GeneratorTraining::kMle;
  // kTwoStage: the pretrainer's phase picks what an update runs (needs an MLM generator of the
  // discriminator's size for init_discriminator_from_generator).
  Training training = Training::kJoint;
};

// The phase of training an update belongs to: what the pretrainer runs and trains
// (ElectraPretrainer::set_phase). kJoint, everything the objective has (joint training);
// two-stage training has two phases, the paper's stages: kGenerator (stage 1), the generator's
// forward, MLM loss and backward only: the discriminator does not run; kDiscriminator (stage 2),
// the generator's forward and sampling without its backward, then the discriminator's forward,
// loss and backward.
enum class TrainingPhase : uint8_t { kJoint, kGenerator, kDiscriminator };
const char* phase_name(TrainingPhase phase);  // "joint" | "generator" | "discriminator"

}  // namespace electra
