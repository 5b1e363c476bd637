// The generator variants' wiring (docs/OBJECTIVES.md "Generator variants") at the tiny shapes, on
// the CPU in f64: generator: unigram builds no generator, replaces the masked tokens with draws
// of its counts and trains the discriminator alone; sharing: none gives the generator tables of
// its own, which only the generator's loss reaches.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

PretrainOptions unigram_options(Objective objective = Objective::kElectra) {
  PretrainOptions o = test::tiny_options();
  o.objective = objective;
  o.generator = GeneratorKind::kUnigram;
  return o;
}

}  // namespace

TEST_CASE("generator: unigram replaces masked tokens with draws of its counts", "[unigram]") {
  Context ctx = Context::cpu(1, Precision::F64);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), unigram_options());
  CHECK_FALSE(test::has_param(model.store(), "generator/"));
  CHECK(test::has_param(model.store(), "discriminator/discriminator_predictions."));
  model.init_weights(ctx, 5);
  // Only tokens 50..59 were "seen": every replacement is one of them.
  std::vector<uint64_t> counts(97, 0);
  for (size_t v = 50; v < 60; ++v) counts[v] = v;
  model.set_unigram_counts(ctx, counts);
  const HostBatch batch = test::tiny_batch();
  model.step(ctx, batch, 7);
  const test::FixedCorruption used = test::download_corruption(ctx, model);
  const std::vector<int32_t> labels = download_as<int32_t>(ctx, model.labels());
  const int64_t t = 16, n = model.slots();
  int64_t slots = 0, replaced = 0;
  for (int64_t i = 0; i < 3 * n; ++i) {
    if (used.weights[i] == 0) continue;
    ++slots;
    CHECK(used.samples[i] >= 50);
    CHECK(used.samples[i] < 60);
    const int64_t at = (i / n) * t + used.positions[i];
    CHECK(labels[at] == (used.samples[i] != batch.ids[at]));
    replaced += labels[at];
  }
  CHECK(slots > 0);
  CHECK(replaced > 0);
  const StepMetrics m = model.metrics(ctx);
  CHECK(m.gen_loss == 0);  // nothing is trained for the generator
  CHECK(m.disc_loss > 0);
  CHECK(m.total_loss == Approx(50 * m.disc_loss).epsilon(1e-12));
  // Another micro-step draws other replacements (the step scalars key the draw).
  model.step(ctx, batch, 8);
  CHECK(test::download_corruption(ctx, model).samples != used.samples);
}

TEST_CASE("generator: unigram is refused where nothing is replaced", "[unigram]") {
  Context ctx = Context::cpu(1, Precision::F64);
  CHECK_THROWS_AS(
      ElectraPretrainer(ctx, test::tiny_electra_config(), unigram_options(Objective::kMlm)),
      UserError);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), unigram_options());
  CHECK_THROWS_AS(model.set_unigram_counts(ctx, std::vector<uint64_t>(96, 1)), UserError);
  CHECK_THROWS_AS(model.set_unigram_counts(ctx, std::vector<uint64_t>(97, 0)), UserError);
}

TEST_CASE("sharing: none gives the generator embedding tables of its own", "[sharing]") {
  Context ctx = Context::cpu(1, Precision::F64);
  PretrainOptions o = test::tiny_options();
  o.sharing = Sharing::kNone;
  ElectraPretrainer model(ctx, test::tiny_electra_config(), o);
  const ParameterStore& store = model.store();
  for (const char* table : {"word_embeddings.weight", "position_embeddings.weight",
                            "token_type_embeddings.weight", "LayerNorm.weight"}) {
    INFO(table);
    CHECK(test::has_param(store, std::string("generator/electra.embeddings.") + table));
    CHECK(test::has_param(store, std::string("discriminator/electra.embeddings.") + table));
  }
  model.init_weights(ctx, 5);
  const HostBatch batch = test::tiny_batch();
  test::FixedStep fixed(ctx, model, batch, test::tiny_corruption(batch));
  // The discriminator's tables get the same gradient as when the generator loss is off
  // (disc_weight only scales the BCE; with it 0 only the generator loss is left).
  auto table_grads = [&](const char* name) {
    const ParamInfo& p = store.info(name);
    const double* g = store.flat_grads().ptr<double>() + p.offset;
    return std::vector<double>(g, g + p.numel);
  };
  model.zero_grads(ctx);
  fixed.run(ctx, 0);
  const std::vector<double> disc_word =
      table_grads("discriminator/electra.embeddings.word_embeddings.weight");
  const std::vector<double> gen_word =
      table_grads("generator/electra.embeddings.word_embeddings.weight");
  PretrainOptions gen_only = o;
  gen_only.disc_weight = 0;
  ElectraPretrainer generator_alone(ctx, test::tiny_electra_config(), gen_only);
  generator_alone.init_weights(ctx, 5);
  test::FixedStep fixed_alone(ctx, generator_alone, batch, test::tiny_corruption(batch));
  generator_alone.zero_grads(ctx);
  fixed_alone.run(ctx, 0);
  const ParameterStore& alone = generator_alone.store();
  auto alone_grads = [&](const char* name) {
    const ParamInfo& p = alone.info(name);
    const double* g = alone.flat_grads().ptr<double>() + p.offset;
    return std::vector<double>(g, g + p.numel);
  };
  // Without the BCE the discriminator's tables get nothing: the generator never reaches them.
  for (double g : alone_grads("discriminator/electra.embeddings.word_embeddings.weight"))
    REQUIRE(g == 0);
  // And the generator's table gets the generator's loss alone, whatever the BCE weight.
  CHECK(alone_grads("generator/electra.embeddings.word_embeddings.weight") == gen_word);
  double disc_norm = 0;
  for (double g : disc_word) disc_norm += g * g;
  CHECK(disc_norm > 0);
}
