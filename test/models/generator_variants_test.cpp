// The generator variants' wiring (docs/OBJECTIVES.md "Generator variants") at the tiny shapes, on
// the CPU in f64: generator: unigram builds no generator, replaces the masked tokens with draws
// of its counts and trains the discriminator alone.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

bool has_param(const ParameterStore& store, const std::string& prefix) {
  for (const ParamInfo& p : store.params()) {
    if (p.name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

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
  CHECK_FALSE(has_param(model.store(), "generator/"));
  CHECK(has_param(model.store(), "discriminator/discriminator_predictions."));
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
