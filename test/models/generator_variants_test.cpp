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

TEST_CASE("sharing: all is one set of encoder weights whose gradient sums both models'",
          "[sharing]") {
  Context ctx = Context::cpu(1, Precision::F64);
  PretrainOptions o = test::tiny_options();
  o.sharing = Sharing::kAll;
  ElectraPretrainer tied(ctx, test::tiny_tied_config(), o);
  const ParameterStore& store = tied.store();
  // The generator owns its head only; its encoder reads the discriminator's parameters.
  CHECK_FALSE(test::has_param(store, "generator/electra."));
  CHECK(test::has_param(store, "generator/generator_predictions."));
  CHECK(test::has_param(store, "generator/generator_lm_head.bias"));
  CHECK(test::has_param(store, "discriminator/electra.embeddings_project."));
  CHECK(test::has_param(store, "discriminator/discriminator_predictions."));

  // The same two models untied (sharing: embeddings), the generator's encoder a copy of the
  // discriminator's: the tied gradient of each encoder weight is the sum of the two copies'.
  PretrainOptions untied_options = test::tiny_options();
  ElectraPretrainer untied(ctx, test::tiny_tied_config(), untied_options);
  untied.init_weights(ctx, 5);
  const ParameterStore& u = untied.store();
  for (const ParamInfo& p : u.params()) {
    const std::string disc = "discriminator/" + p.name.substr(p.name.find('/') + 1);
    if (p.name.rfind("generator/electra.", 0) == 0) test::copy_param(u, disc, u, p.name);
  }
  for (const ParamInfo& p : store.params()) test::copy_param(u, p.name, store, p.name);
  const HostBatch batch = test::tiny_batch();
  test::FixedStep fixed_tied(ctx, tied, batch, test::tiny_corruption(batch));
  test::FixedStep fixed_untied(ctx, untied, batch, test::tiny_corruption(batch));
  tied.zero_grads(ctx);
  untied.zero_grads(ctx);
  fixed_tied.run(ctx, 0);
  fixed_untied.run(ctx, 0);
  const StepMetrics mt = tied.metrics(ctx), mu = untied.metrics(ctx);
  CHECK(mt.total_loss == Approx(mu.total_loss).epsilon(1e-13));
  CHECK(mt.gen_loss > 0);
  CHECK(mt.disc_loss > 0);
  int encoder_tensors = 0;
  for (const ParamInfo& p : store.params()) {
    INFO(p.name);
    std::vector<double> expect = test::param_grads(u, p.name);
    if (p.name.rfind("discriminator/electra.", 0) == 0 &&
        p.name.find(".embeddings.") == std::string::npos) {
      ++encoder_tensors;
      const std::vector<double> gen =
          test::param_grads(u, "generator/" + p.name.substr(std::string("discriminator/").size()));
      for (size_t i = 0; i < expect.size(); ++i) expect[i] += gen[i];
    }
    const std::vector<double> got = test::param_grads(store, p.name);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - expect[i]));
      scale = std::max(scale, std::abs(expect[i]));
    }
    CHECK(worst <= 1e-12 * scale + 1e-15);  // key.bias: zero up to rounding (softmax invariance)
  }
  // The projection (2) and 2 layers of 16 tensors each.
  CHECK(encoder_tensors == 2 + 2 * 16);
}

TEST_CASE("sharing: all and gdes are refused without a generator model or, all, unequal sizes",
          "[sharing]") {
  Context ctx = Context::cpu(1, Precision::F64);
  PretrainOptions o = test::tiny_options();
  o.sharing = Sharing::kAll;
  CHECK_THROWS_WITH(ElectraPretrainer(ctx, test::tiny_electra_config(), o),
                    "pretrain: sharing: all needs a generator of the discriminator's size: "
                    "model.generator_multiplier 0.5 gives the generator hidden size 16, the "
                    "discriminator's is 32 (set model.generator_multiplier: 1)");
  ElectraConfig heads = test::tiny_tied_config();
  heads.discriminator.heads = 2;
  CHECK_THROWS_WITH(ElectraPretrainer(ctx, heads, o),
                    Catch::Contains("model.heads is 2 but the generator of hidden size 32 has "
                                    "hidden / 64 = 1 heads"));
  ElectraConfig ffn = test::tiny_tied_config();
  ffn.discriminator.ffn = 64;
  CHECK_THROWS_WITH(ElectraPretrainer(ctx, ffn, o),
                    Catch::Contains("model.ffn is 64 but the generator's FFN is 4 x hidden = 128"));
  for (Sharing sharing : {Sharing::kAll, Sharing::kGdes}) {
    INFO(sharing_name(sharing));
    o.sharing = sharing;
    o.objective = Objective::kMlm;
    CHECK_THROWS_WITH(ElectraPretrainer(ctx, test::tiny_tied_config(), o),
                      Catch::Contains("but objective: mlm has no generator"));
    o.objective = Objective::kElectra;
    o.generator = GeneratorKind::kUnigram;
    CHECK_THROWS_WITH(ElectraPretrainer(ctx, test::tiny_tied_config(), o),
                      Catch::Contains("generator: unigram builds no generator model"));
    o.generator = GeneratorKind::kMlm;
  }
}

// The pretrainer refuses the combinations the config refuses (apps/pretrain_config.cpp): a
// two-stage run with adversarial training, or with sharing all or gdes.
TEST_CASE("two-stage is refused with adversarial training and with sharing all or gdes",
          "[sharing]") {
  Context ctx = Context::cpu(1, Precision::F64);
  PretrainOptions o = test::tiny_options();
  o.training = Training::kTwoStage;
  CHECK_NOTHROW(ElectraPretrainer(ctx, test::tiny_tied_config(), o));
  o.generator_training = GeneratorTraining::kAdversarial;
  CHECK_THROWS_WITH(ElectraPretrainer(ctx, test::tiny_tied_config(), o),
                    "training: two-stage needs generator_training: mle and sharing: embeddings "
                    "or none, not adversarial and embeddings");
  o.generator_training = GeneratorTraining::kMle;
  for (Sharing sharing : {Sharing::kAll, Sharing::kGdes}) {
    o.sharing = sharing;
    CHECK_THROWS_WITH(ElectraPretrainer(ctx, test::tiny_tied_config(), o),
                      Catch::Contains(str_cat("not mle and ", sharing_name(sharing))));
  }
}

TEST_CASE("sharing: gdes reads sg(E_G) + E_delta; the discriminator's loss reaches E_delta only",
          "[sharing]") {
  Context ctx = Context::cpu(1, Precision::F64);
  PretrainOptions o = test::tiny_options();
  o.sharing = Sharing::kGdes;
  ElectraPretrainer gdes(ctx, test::tiny_electra_config(), o);
  const ParameterStore& store = gdes.store();
  const std::string g = "generator/electra.embeddings.", d = "discriminator/electra.embeddings.";
  for (const char* table : {"word_embeddings", "position_embeddings", "token_type_embeddings"}) {
    INFO(table);
    CHECK(store.contains(g + table + ".weight"));
    CHECK(store.contains(d + table + ".delta"));
    CHECK_FALSE(store.contains(d + table + ".weight"));
  }
  CHECK(store.contains(d + "LayerNorm.weight"));  // the discriminator's own LayerNorm
  CHECK(store.contains(g + "LayerNorm.weight"));
  gdes.init_weights(ctx, 5);
  for (const char* delta :
       {"word_embeddings.delta", "position_embeddings.delta", "token_type_embeddings.delta"}) {
    INFO(delta);
    const Tensor values = store.param(d + delta);
    for (int64_t i = 0; i < values.numel(); ++i) REQUIRE(values.ptr<double>()[i] == 0);
  }

  // With a non-zero residual, the step equals sharing: none's with the discriminator's tables set
  // to E_G + E_delta: the same loss, the generator's tables the same gradient (the generator's
  // loss alone) and E_delta the gradient of the discriminator's own tables.
  double* flat = store.flat_params().ptr<double>();
  const std::vector<double> noise =
      test::random_vector<double>(static_cast<size_t>(store.total_elements()), 3, -0.05, 0.05);
  for (const ParamInfo& p : store.params()) {
    if (!is_gdes_residual(p.name)) continue;
    for (int64_t j = 0; j < p.numel; ++j) flat[p.offset + j] = noise[p.offset + j];
  }
  PretrainOptions none_options = o;
  none_options.sharing = Sharing::kNone;
  ElectraPretrainer none(ctx, test::tiny_electra_config(), none_options);
  const ParameterStore& n = none.store();
  for (const ParamInfo& p : n.params()) {
    const bool table = p.name.rfind(d, 0) == 0 && p.name.ends_with("_embeddings.weight");
    if (table) {
      const std::string name = p.name.substr(d.size(), p.name.size() - d.size() - 7);
      const ParamInfo& base = store.info(g + name + ".weight");
      const ParamInfo& delta = store.info(d + name + ".delta");
      for (int64_t j = 0; j < p.numel; ++j) {
        n.flat_params().ptr<double>()[p.offset + j] =
            flat[base.offset + j] + flat[delta.offset + j];
      }
    } else {
      test::copy_param(store, p.name, n, p.name);
    }
  }
  const HostBatch batch = test::tiny_batch();
  test::FixedStep fixed_gdes(ctx, gdes, batch, test::tiny_corruption(batch));
  test::FixedStep fixed_none(ctx, none, batch, test::tiny_corruption(batch));
  gdes.zero_grads(ctx);
  none.zero_grads(ctx);
  fixed_gdes.run(ctx, 0);
  fixed_none.run(ctx, 0);
  CHECK(gdes.metrics(ctx).total_loss == none.metrics(ctx).total_loss);
  for (const char* table : {"word_embeddings", "position_embeddings", "token_type_embeddings"}) {
    INFO(table);
    CHECK(test::param_grads(store, d + table + ".delta") ==
          test::param_grads(n, d + table + ".weight"));
    CHECK(test::param_grads(store, g + table + ".weight") ==
          test::param_grads(n, g + table + ".weight"));
  }

  // disc_weight 0 leaves E_G's gradient unchanged and gives E_delta none.
  PretrainOptions silent = o;
  silent.disc_weight = 0;
  ElectraPretrainer gen_only(ctx, test::tiny_electra_config(), silent);
  for (const ParamInfo& p : store.params())
    test::copy_param(store, p.name, gen_only.store(), p.name);
  test::FixedStep fixed_gen_only(ctx, gen_only, batch, test::tiny_corruption(batch));
  gen_only.zero_grads(ctx);
  fixed_gen_only.run(ctx, 0);
  const ParameterStore& s0 = gen_only.store();
  for (const char* table : {"word_embeddings", "position_embeddings", "token_type_embeddings"}) {
    INFO(table);
    CHECK(test::param_grads(s0, g + table + ".weight") ==
          test::param_grads(store, g + table + ".weight"));
    for (double x : test::param_grads(s0, d + table + ".delta")) REQUIRE(x == 0);
    double norm = 0;
    for (double x : test::param_grads(store, d + table + ".delta")) norm += x * x;
    CHECK(norm > 0);
  }
}
