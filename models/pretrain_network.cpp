#include "models/pretrain_network.h"

#include "models/metric_rows.h"
#include "models/objective_all_tokens.h"

namespace electra {

namespace {

int64_t padded_vocab(int64_t vocab, int64_t multiple) {
  return (vocab + multiple - 1) / multiple * multiple;
}

// The objective's stage: the discriminator-sized model with its heads and loss.
std::unique_ptr<DiscriminatorStage> objective_stage(ModelBuilder& b, const UpdateInputs& in,
                                                    const DiscriminatorInputs& d,
                                                    Objective objective) {
  switch (objective) {
    case Objective::kElectra:
      return std::make_unique<ElectraObjective>(b, in, d, /*masked_only=*/false);
    case Objective::kElectra15:
      return std::make_unique<ElectraObjective>(b, in, d, /*masked_only=*/true);
    case Objective::kMlm:
    case Objective::kReplaceMlm:
      return std::make_unique<MlmObjective>(b, in, d);
    case Objective::kAllTokensMlm:
      return std::make_unique<AllTokensObjective>(b, in, d);
  }
  ELECTRA_CHECK(false, "pretrain: objective ", static_cast<int>(objective));
  return nullptr;
}

}  // namespace

ElectraPretrainer::Network::Network(ModelBuilder& b, const ParameterStore& store,
                                    const ElectraConfig& config, const PretrainOptions& o,
                                    int64_t slots)
    : wiring(objective_wiring(o.objective)),
      in(b, o.batch, o.seq_len, slots, config.discriminator.vocab_size),
      masking(b, in,
              MaskingOptions{.tokens = o.tokens,
                             .mask_token_prob = o.mask_token_prob,
                             .random_token_prob = o.random_token_prob}) {
  const int64_t vocab_rows = padded_vocab(config.discriminator.vocab_size, o.vocab_multiple);
  const std::string disc_prefix = str_cat(ElectraDiscriminator::kPrefix, "electra.");
  const std::string gen_prefix = str_cat(ElectraGenerator::kPrefix, "electra.");
  const bool mlm_generator = wiring.generator && o.generator == GeneratorKind::kMlm;
  const bool adversarial = o.generator_training == GeneratorTraining::kAdversarial;
  if (mlm_generator && o.sharing == Sharing::kGdes) {
    // The generator's tables first, then the discriminator's residuals and LayerNorm.
    generator_tables =
        std::make_unique<TablesStage>(b, store, gen_prefix, config.generator(), vocab_rows);
    tables = std::make_unique<TablesStage>(b, store, disc_prefix, config.discriminator, vocab_rows,
                                           generator_tables->tables());
  } else {
    tables = std::make_unique<TablesStage>(b, store, disc_prefix, config.discriminator, vocab_rows);
    if (mlm_generator && o.sharing == Sharing::kNone) {
      generator_tables =
          std::make_unique<TablesStage>(b, store, gen_prefix, config.generator(), vocab_rows);
    }
  }
  const bool tie_all = mlm_generator && o.sharing == Sharing::kAll;
  GeneratorStageOptions gen{.temperature = o.temperature, .unscaled_loss = adversarial};
  if (mlm_generator && !tie_all) {
    const TablesStage& read = generator_tables ? *generator_tables : *tables;
    generator = std::make_unique<GeneratorStage>(b, in, config.generator(), read.tables(), gen);
  }
  discriminator = objective_stage(b, in,
                                  DiscriminatorInputs{.config = config.discriminator,
                                                      .tables = tables->tables(),
                                                      .gdes = tables->gdes(),
                                                      .replaced_input = wiring.generator},
                                  o.objective);
  if (tie_all) {  // only the head is declared here, after the discriminator
    gen.tied_to = ElectraDiscriminator::kPrefix;
    generator = std::make_unique<GeneratorStage>(b, in, config.generator(), tables->tables(), gen);
    generator->set_adds_into(*discriminator);
  }
  if (wiring.generator && !mlm_generator) unigram = std::make_unique<UnigramStage>(b, in);
  if (adversarial) {
    adversary =
        std::make_unique<AdversarialStage>(b, in, config.generator().hidden, *generator,
                                           dynamic_cast<const ElectraObjective&>(*discriminator));
  }
  metrics = b.activation(DType::F64, {kTrainMetrics});
  no_loss = Tensor::view_of(in.scalars.data, b.dtypes().statistic, in.scalars.device, {0});
  lists[0] = list(StageMode::kTrain, StageMode::kTrain, StageMode::kTrain, StageMode::kTrain);
  if (o.training == Training::kTwoStage && generator) {
    // Stage 1 trains the generator and the tables it reads; stage 2 the discriminator and its
    // tables, the generator's forward still sampling (shared tables are its: frozen).
    const bool own = o.sharing == Sharing::kNone;
    lists[1] = list(own ? StageMode::kSkip : StageMode::kTrain, StageMode::kTrain,
                    StageMode::kTrain, StageMode::kSkip);
    lists[2] = list(own ? StageMode::kTrain : StageMode::kFrozen, StageMode::kSkip,
                    StageMode::kFrozen, StageMode::kTrain);
  }
}

StageList ElectraPretrainer::Network::list(StageMode disc_tables, StageMode own_tables,
                                           StageMode gen, StageMode disc) const {
  std::vector<StageList::Entry> e;
  e.push_back({tables.get(), disc_tables});
  if (generator_tables) {
    const StageList::Entry own{generator_tables.get(), own_tables};
    const bool first = generator_tables->span().first < tables->span().first;
    e.insert(first ? e.begin() : e.end(), own);
  }
  if (generator) e.push_back({generator.get(), gen});
  if (unigram) e.push_back({unigram.get(), StageMode::kTrain});
  e.push_back({discriminator.get(), disc});
  if (adversary) e.push_back({adversary.get(), StageMode::kTrain});
  return StageList(std::move(e));
}

}  // namespace electra
