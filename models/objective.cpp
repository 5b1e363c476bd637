#include "models/objective.h"

#include <array>

namespace electra {
namespace {

struct Entry {
  Objective objective;
  const char* name;
};

constexpr std::array<Entry, 5> kObjectives = {{{Objective::kElectra, "electra"},
                                               {Objective::kElectra15, "electra-15"},
                                               {Objective::kMlm, "mlm"},
                                               {Objective::kReplaceMlm, "replace-mlm"},
                                               {Objective::kAllTokensMlm, "all-tokens-mlm"}}};

}  // namespace

ObjectiveWiring objective_wiring(Objective objective) {
  ObjectiveWiring w;
  switch (objective) {
    case Objective::kElectra:
      break;
    case Objective::kElectra15:
      w.masked_only = true;
      break;
    case Objective::kMlm:
      w.generator = false;
      w.binary_head = false;
      w.mlm_head = true;
      w.bert_corruption = true;
      break;
    case Objective::kReplaceMlm:
      w.binary_head = false;
      w.mlm_head = true;
      break;
    case Objective::kAllTokensMlm:
      w.mlm_head = true;
      w.all_tokens = true;
      break;
  }
  return w;
}

const char* objective_name(Objective objective) {
  for (const Entry& e : kObjectives) {
    if (e.objective == objective) return e.name;
  }
  return "?";
}

bool parse_objective(const std::string& name, Objective& out) {
  for (const Entry& e : kObjectives) {
    if (name == e.name) {
      out = e.objective;
      return true;
    }
  }
  return false;
}

const char* objective_names() {
  return "electra|electra-15|mlm|replace-mlm|all-tokens-mlm";
}

const char* generator_kind_name(GeneratorKind kind) {
  return kind == GeneratorKind::kUnigram ? "unigram" : "mlm";
}

const char* sharing_name(Sharing sharing) {
  switch (sharing) {
    case Sharing::kEmbeddings:
      return "embeddings";
    case Sharing::kNone:
      return "none";
    case Sharing::kAll:
      return "all";
    case Sharing::kGdes:
      return "gdes";
  }
  return "?";
}

const char* generator_training_name(GeneratorTraining training) {
  return training == GeneratorTraining::kAdversarial ? "adversarial" : "mle";
}

bool adversarial_applies(Objective objective, GeneratorKind generator) {
  const ObjectiveWiring w = objective_wiring(objective);
  return generator == GeneratorKind::kMlm && w.generator && w.binary_head && !w.all_tokens;
}

const char* training_name(Training training) {
  return training == Training::kTwoStage ? "two-stage" : "joint";
}

const char* phase_name(TrainingPhase phase) {
  switch (phase) {
    case TrainingPhase::kJoint:
      return "joint";
    case TrainingPhase::kGenerator:
      return "generator";
    case TrainingPhase::kDiscriminator:
      return "discriminator";
  }
  return "?";
}

}  // namespace electra
