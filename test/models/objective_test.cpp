// The objectives' wiring (models/objective.h) at the tiny shapes, on the CPU in f64:
// which parameters each builds, that electra-15's binary loss covers only the masked positions,
// that replace-mlm's model sees the generator's samples, that mlm runs without a generator, and
// the names and defaults of the config key.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

PretrainOptions options_for(Objective objective) {
  PretrainOptions o = test::tiny_options();
  o.objective = objective;
  return o;
}

}  // namespace

TEST_CASE("objective names parse and round-trip", "[objective]") {
  for (const char* name : {"electra", "electra-15", "mlm", "replace-mlm", "all-tokens-mlm"}) {
    Objective o = Objective::kElectra;
    REQUIRE(parse_objective(name, o));
    CHECK(std::string(objective_name(o)) == name);
  }
  Objective o = Objective::kElectra;
  CHECK_FALSE(parse_objective("bert", o));
}

TEST_CASE("each objective builds the parts it trains", "[objective]") {
  Context ctx = Context::cpu(1, Precision::F64);
  struct Expected {
    Objective objective;
    bool generator, binary, mlm;
  };
  for (const Expected& e : {Expected{Objective::kElectra, true, true, false},
                            Expected{Objective::kElectra15, true, true, false},
                            Expected{Objective::kMlm, false, false, true},
                            Expected{Objective::kReplaceMlm, true, false, true},
                            Expected{Objective::kAllTokensMlm, true, true, true}}) {
    INFO(objective_name(e.objective));
    ElectraPretrainer model(ctx, test::tiny_electra_config(), options_for(e.objective));
    const ParameterStore& store = model.store();
    CHECK(test::has_param(store, "generator/") == e.generator);
    CHECK(test::has_param(store, "discriminator/discriminator_predictions.") == e.binary);
    CHECK(test::has_param(store, "discriminator/generator_predictions.") == e.mlm);
    CHECK(test::has_param(store, "discriminator/generator_lm_head.bias") == e.mlm);
    CHECK(test::has_param(store, "discriminator/electra.encoder.layer.1."));
  }
}

TEST_CASE("electra-15's binary loss weights only the masked positions", "[objective]") {
  Context ctx = Context::cpu(1, Precision::F64);
  const HostBatch batch = test::tiny_batch();
  const test::FixedCorruption fixed = test::tiny_corruption(batch);
  const int64_t t = 16, n = 4;
  std::vector<bool> masked(3 * t, false);
  for (int64_t i = 0; i < 3 * n; ++i) {
    if (fixed.weights[i] != 0) masked[(i / n) * t + fixed.positions[i]] = true;
  }
  for (const Objective objective : {Objective::kElectra, Objective::kElectra15}) {
    INFO(objective_name(objective));
    ElectraPretrainer model(ctx, test::tiny_electra_config(), options_for(objective));
    model.init_weights(ctx, 5);
    test::FixedStep step(ctx, model, batch, fixed);
    step.feed(ctx);
    // The forward's stages one by one; after the loss the binary head's logits hold
    // d loss / d logit.
    const Corruption& c = step.corruption();
    const DropoutPass pass{ctx.rng(RngPurpose::kDropout, 0), false};
    model.generator_forward(ctx, c, pass);
    ForwardContext saved;
    saved.pass = pass;
    model.generator_loss(ctx, c, saved);
    const Tensor logits = model.discriminator_forward(ctx, c, saved.samples, pass);
    model.discriminator_loss(ctx, c, saved);
    const std::vector<double> dz = download_as<double>(ctx, logits);
    const StepMetrics m = model.metrics(ctx, c);
    int64_t outside = 0, inside = 0;
    for (int64_t i = 0; i < 3 * t; ++i) {
      if (batch.ids[i] == 0) continue;  // padding: weight 0 in both
      (masked[i] ? inside : outside) += dz[i] != 0;
    }
    CHECK(inside == 8);
    if (objective == Objective::kElectra15) {
      CHECK(outside == 0);
      CHECK(m.tokens == 8);  // the binary loss's normaliser: the masked positions
    } else {
      CHECK(outside == 34 - 8);
      CHECK(m.tokens == 34);
    }
  }
}

TEST_CASE("replace-mlm feeds the generator's samples to the model; mlm needs no generator",
          "[objective]") {
  Context ctx = Context::cpu(1, Precision::F64);
  const HostBatch batch = test::tiny_batch();
  const test::FixedCorruption fixed = test::tiny_corruption(batch);
  const int64_t t = 16, n = 4;
  {
    ElectraPretrainer model(ctx, test::tiny_electra_config(), options_for(Objective::kReplaceMlm));
    model.init_weights(ctx, 5);
    test::FixedStep step(ctx, model, batch, fixed);
    step.run(ctx, 0);
    // labels = (model input != original): exactly the slots whose sample differs.
    const std::vector<int32_t> labels = download_as<int32_t>(ctx, model.labels());
    int64_t replaced = 0;
    for (int64_t i = 0; i < 3 * n; ++i) {
      if (fixed.weights[i] == 0) continue;
      const int64_t at = (i / n) * t + fixed.positions[i];
      CHECK(labels[at] == (fixed.samples[i] != batch.ids[at]));
      replaced += labels[at];
    }
    CHECK(replaced >= 1);
    const StepMetrics m = model.metrics(ctx);
    CHECK(m.disc_loss == 0);
    CHECK(m.gen_loss > 0);
    CHECK(m.mlm_loss > 0);
    CHECK(m.total_loss == Approx(m.gen_loss + m.mlm_loss).epsilon(1e-12));
  }
  {
    ElectraPretrainer model(ctx, test::tiny_electra_config(), options_for(Objective::kMlm));
    model.init_weights(ctx, 5);
    test::FixedStep step(ctx, model, batch, fixed);
    step.run(ctx, 0);
    const StepMetrics m = model.metrics(ctx);
    CHECK(m.gen_loss == 0);
    CHECK(m.disc_loss == 0);
    // An untrained model predicts about uniformly: the loss is near log V.
    CHECK(m.mlm_loss == Approx(std::log(97.0)).epsilon(0.2));
    CHECK(m.total_loss == m.mlm_loss);
  }
}

TEST_CASE("the mlm objective corrupts the BERT way in training", "[objective]") {
  Context ctx = Context::cpu(1, Precision::F32);
  PretrainOptions o = options_for(Objective::kMlm);
  o.mask_token_prob = 0.8f;
  o.random_token_prob = 0.1f;
  ElectraPretrainer model(ctx, test::tiny_electra_config(), o);
  model.init_weights(ctx, 5);
  const HostBatch batch = test::tiny_batch();
  int64_t random = 0, chosen = 0;
  for (uint32_t step = 0; step < 200; ++step) {
    model.step(ctx, batch, step);
    const Corruption& c = model.last_corruption();
    const std::vector<int32_t> ids = download_as<int32_t>(ctx, c.generator_ids);
    const std::vector<int32_t> positions = download_as<int32_t>(ctx, c.positions);
    const std::vector<float> weights = download_as<float>(ctx, c.weights);
    for (size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] == 0) continue;
      const int64_t at = static_cast<int64_t>(i / 4) * 16 + positions[i];
      ++chosen;
      random += ids[at] != 3 && ids[at] != batch.ids[at];
    }
  }
  // 1,600 chosen positions, 10% random (less the 1/97 chance of drawing the original back).
  const double p = 0.1 * 96 / 97, sd = std::sqrt(chosen * p * (1 - p));
  INFO(random << " random of " << chosen);
  CHECK(std::abs(random - p * chosen) <= 5 * sd);
}
