// ElectraPretrainer::Network: the pretrainer's stages (models/update_stage.h) and their lists,
// one per TrainingPhase: the assembly of one update from the options. Private to
// models/pretrainer*.cpp.
#pragma once

#include <memory>

#include "models/adversarial_stage.h"
#include "models/generator_stage.h"
#include "models/objective_mlm.h"
#include "models/pretrainer.h"
#include "models/stage_list.h"
#include "models/tables_stage.h"
#include "models/unigram_stage.h"

namespace electra {

// The stages and every per-step buffer, built by one ModelBuilder pass. The stages are
// constructed in the order their parameters are declared (the layout of the parameter buffer and
// of the checkpoints).
struct ElectraPretrainer::Network {
  Network(ModelBuilder& b, const ParameterStore& store, const ElectraConfig& config,
          const PretrainOptions& o, int64_t slots);

  // The list: the tables in declaration order, the replacement source, the objective, the
  // adversary, with the modes of the discriminator's tables, the generator's own, the generator
  // and the discriminator (the others train when present).
  StageList list(StageMode disc_tables, StageMode own_tables, StageMode gen, StageMode disc) const;

  const StageList& phase_list(TrainingPhase phase) const { return lists[static_cast<int>(phase)]; }
  ElectraObjective* electra() const { return dynamic_cast<ElectraObjective*>(discriminator.get()); }
  MlmObjective* mlm() const { return dynamic_cast<MlmObjective*>(discriminator.get()); }

  ObjectiveWiring wiring;
  UpdateInputs in;
  MaskingStage masking;
  std::unique_ptr<TablesStage> tables;            // the discriminator's (shared but for none, gdes)
  std::unique_ptr<TablesStage> generator_tables;  // sharing: none, gdes
  std::unique_ptr<GeneratorStage> generator;      // not for mlm nor generator: unigram
  std::unique_ptr<UnigramStage> unigram;          // generator: unigram
  std::unique_ptr<DiscriminatorStage> discriminator;  // always: "the" model
  std::unique_ptr<AdversarialStage> adversary;        // generator_training: adversarial
  Tensor metrics;                                     // f64 [kTrainMetrics]: metrics()'s
  Tensor no_loss;      // zero rows of the statistics' dtype: accumulate_means without a generator
  StageList lists[3];  // per TrainingPhase
};

}  // namespace electra
