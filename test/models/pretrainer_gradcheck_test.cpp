// The whole pre-training step in float64 on the CPU: every parameter's gradient, the shared
// embedding tables included (they receive both losses), against central differences of the total
// loss gen + 50 * disc; and the same for every other objective (models/objective.h), whose total
// loss is gen + 50 * disc + mlm over the parts it has, and every sharing (with gdes the generator's
// parameters against the generator's loss: the stop-gradient).
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

// Adds noise to every parameter: larger random biases and LayerNorm parameters than the init, so
// that no gradient vanishes by symmetry (zero biases, unit gammas).
void perturb(const ParameterStore& store) {
  double* flat = store.flat_params().ptr<double>();
  const std::vector<double> noise =
      test::random_vector<double>(static_cast<size_t>(store.total_elements()), 11, -0.2, 0.2);
  for (const ParamInfo& p : store.params()) {
    const bool small = p.kind != ParamKind::kWeight && p.kind != ParamKind::kEmbedding;
    for (int64_t j = 0; j < p.numel; ++j) {
      flat[p.offset + j] += small ? noise[p.offset + j] : 2 * noise[p.offset + j];
    }
  }
}

// Checks up to `per_tensor` evenly spaced coordinates of every parameter tensor. With
// generator: unigram the update runs whole (masking, the unigram op's samples, forward, backward)
// rather than from the fixed corruption.
void check_step_gradients(Objective objective, int64_t per_tensor,
                          GeneratorKind generator = GeneratorKind::kMlm,
                          Sharing sharing = Sharing::kEmbeddings,
                          TrainingPhase stage = TrainingPhase::kJoint) {
  Context ctx = Context::cpu(17, Precision::F64);
  PretrainOptions options = test::tiny_options();
  options.objective = objective;
  options.generator = generator;
  options.sharing = sharing;
  if (stage != TrainingPhase::kJoint) options.training = Training::kTwoStage;
  const ElectraConfig config =
      sharing == Sharing::kAll ? test::tiny_tied_config() : test::tiny_electra_config();
  ElectraPretrainer model(ctx, config, options);
  model.set_phase(stage);
  model.init_weights(ctx, 3);
  if (generator == GeneratorKind::kUnigram) {
    std::vector<uint64_t> counts(97);
    for (size_t v = 4; v < counts.size(); ++v) counts[v] = 1 + v % 5;
    model.set_unigram_counts(ctx, counts);
  }
  const ParameterStore& store = model.store();
  double* flat = store.flat_params().ptr<double>();
  perturb(store);
  const HostBatch batch = test::tiny_batch();
  test::FixedStep fixed(ctx, model, batch, test::tiny_corruption(batch));

  const bool whole = generator == GeneratorKind::kUnigram;
  auto run = [&]() {
    if (whole) {
      model.step(ctx, batch, 0);
    } else {
      fixed.run(ctx, 0);
    }
  };
  model.zero_grads(ctx);
  run();
  const StepMetrics base = model.metrics(ctx);
  REQUIRE(std::isfinite(base.total_loss));
  const ObjectiveWiring wiring = objective_wiring(objective);
  if (wiring.binary_head && !wiring.all_tokens && stage != TrainingPhase::kGenerator)
    CHECK(base.replaced_fraction > 0);
  if (wiring.mlm_head) CHECK(base.mlm_loss > 0);
  const std::vector<double> analytic(store.flat_grads().ptr<double>(),
                                     store.flat_grads().ptr<double>() + store.total_elements());

  // The loss the update trains. sharing: gdes: the discriminator reads the generator's tables
  // through a stop-gradient, so the update's gradient of a generator parameter is that of the
  // generator's loss alone. Two-stage: stage 1 the generator's MLM loss (the discriminator does
  // not run: total_loss is gen_loss), stage 2 lambda x BCE (the frozen generator's loss is
  // reported, not trained).
  bool generator_loss_only = false;
  auto loss = [&]() {
    run();
    const StepMetrics m = model.metrics(ctx);
    if (generator_loss_only) return m.gen_loss;
    return stage == TrainingPhase::kDiscriminator ? options.disc_weight * m.disc_loss
                                                  : m.total_loss;
  };
  const double h = 1e-5;
  for (const ParamInfo& p : store.params()) {
    generator_loss_only = sharing == Sharing::kGdes && p.name.rfind("generator/", 0) == 0;
    const int64_t stride = std::max<int64_t>(1, p.numel / per_tensor);
    double worst = 0, scale = 0;
    std::vector<double> ana, num;
    for (int64_t j = 0; j < p.numel; j += stride) {
      double& x = flat[p.offset + j];
      const double saved = x;
      x = saved + h;
      const double up = loss();
      x = saved - h;
      const double down = loss();
      x = saved;
      num.push_back((up - down) / (2 * h));
      ana.push_back(analytic[p.offset + j]);
    }
    for (size_t i = 0; i < num.size(); ++i) {
      worst = std::max(worst, std::abs(ana[i] - num[i]));
      scale = std::max(scale, std::abs(num[i]));
    }
    INFO(p.name << ": max |analytic - numeric| " << worst << ", max |numeric| " << scale);
    if (model.frozen_in(stage, p)) {
      // Frozen: its gradient is exactly 0 (its model's backward does not run; stage 2 drops the
      // discriminator's gradient into the shared tables, which belong to the frozen generator).
      // Stage 1's loss does not depend on the discriminator at all.
      for (int64_t j = 0; j < p.numel; ++j) REQUIRE(analytic[p.offset + j] == 0.0);
      if (stage == TrainingPhase::kGenerator) CHECK(scale == 0);
    } else if (p.name.find("key.bias") != std::string::npos) {
      // Softmax is invariant to q . b_k, the same for every key of a row: the true gradient is
      // exactly zero and both sides must be zero up to rounding.
      CHECK(worst <= 1e-8);
      CHECK(scale <= 1e-8);
    } else {
      CHECK(scale > 0);
      CHECK(worst <= 1e-6 * scale);
    }
  }
}

}  // namespace

TEST_CASE("pre-training step gradients equal central differences in float64", "[gradcheck]") {
  check_step_gradients(Objective::kElectra, 128);
}

// The other objectives at fewer coordinates per tensor (the suite's time): every tensor is still
// checked, the wiring of each part included.
TEST_CASE("electra-15 step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kElectra15, 24);
}

TEST_CASE("mlm step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kMlm, 24);
}

TEST_CASE("replace-mlm step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kReplaceMlm, 24);
}

TEST_CASE("all-tokens-mlm step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kAllTokensMlm, 24);
}

// generator: unigram: no generator parameters, the discriminator's BCE on the unigram op's
// replacements (its loss is the whole loss: gen_loss is 0).
TEST_CASE("unigram-generator step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kElectra, 48, GeneratorKind::kUnigram);
}

// sharing: none: the generator's own tables get the generator's loss only, the discriminator's
// tables the discriminator's.
TEST_CASE("sharing: none step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kElectra, 24, GeneratorKind::kMlm, Sharing::kNone);
}

// generator_training: adversarial: the update's gradient is that of the surrogate
//   disc_weight BCE + (1 / M) sum_t (-sg(A_t) log p_G(x^_t) + baseline_loss_t(sg(h_G), sg(R)))
// (kernels/reinforce.h). The central differences take the BCE from the metrics, log p_G(x^_t)
// from the op's per-slot output with the advantages frozen at the unperturbed run's, and the
// baseline's loss only for the baseline's own parameters (its input and its target are
// stop-gradients for every other parameter).
TEST_CASE("adversarial step gradients equal central differences of the REINFORCE surrogate",
          "[gradcheck]") {
  Context ctx = Context::cpu(17, Precision::F64);
  PretrainOptions options = test::tiny_options();
  options.generator_training = GeneratorTraining::kAdversarial;
  ElectraPretrainer model(ctx, test::tiny_electra_config(), options);
  model.init_weights(ctx, 3);
  const ParameterStore& store = model.store();
  double* flat = store.flat_params().ptr<double>();
  perturb(store);
  const HostBatch batch = test::tiny_batch();
  test::FixedStep fixed(ctx, model, batch, test::tiny_corruption(batch));
  const ReinforceSlots& slots = model.adversarial_slots();
  model.zero_grads(ctx);
  fixed.run(ctx, 0);
  const std::vector<double> advantage = download_as<double>(ctx, slots.advantage);
  const std::vector<float> weights = download_as<float>(ctx, model.last_corruption().weights);
  double masked = 0;
  for (float w : weights) masked += w;
  const std::vector<double> analytic(store.flat_grads().ptr<double>(),
                                     store.flat_grads().ptr<double>() + store.total_elements());
  {
    const StepMetrics base = model.metrics(ctx);
    REQUIRE(std::isfinite(base.total_loss));
    CHECK(base.reward > 0);
    CHECK(base.baseline_loss > 0);
    double spread = 0;  // the advantages are not all equal (nothing cancels by symmetry)
    for (size_t i = 1; i < advantage.size(); ++i) {
      if (weights[i] != 0) spread = std::max(spread, std::abs(advantage[i] - advantage[0]));
    }
    CHECK(spread > 1e-3);
  }
  auto surrogate = [&](bool with_baseline) {
    fixed.run(ctx, 0);
    const std::vector<double> log_prob = download_as<double>(ctx, slots.log_prob);
    const std::vector<double> baseline_loss = download_as<double>(ctx, slots.baseline_loss);
    double s = options.disc_weight * model.metrics(ctx).disc_loss;
    for (size_t i = 0; i < log_prob.size(); ++i) {
      s += (-advantage[i] * log_prob[i] + (with_baseline ? baseline_loss[i] : 0.0)) / masked;
    }
    return s;
  };
  const double h = 1e-5;
  for (const ParamInfo& p : store.params()) {
    const bool baseline = p.name.rfind("generator/adversarial_baseline.", 0) == 0;
    const int64_t stride = std::max<int64_t>(1, p.numel / 24);
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < p.numel; j += stride) {
      double& x = flat[p.offset + j];
      const double saved = x;
      x = saved + h;
      const double up = surrogate(baseline);
      x = saved - h;
      const double down = surrogate(baseline);
      x = saved;
      const double num = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(analytic[p.offset + j] - num));
      scale = std::max(scale, std::abs(num));
    }
    INFO(p.name << ": max |analytic - numeric| " << worst << ", max |numeric| " << scale);
    if (p.name.find("key.bias") != std::string::npos) {
      CHECK(worst <= 1e-8);
      CHECK(scale <= 1e-8);
    } else {
      CHECK(scale > 0);
      CHECK(worst <= 1e-6 * scale);
    }
  }
}

// sharing: all: every encoder weight receives both models' gradients (equal sizes).
TEST_CASE("sharing: all step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kElectra, 24, GeneratorKind::kMlm, Sharing::kAll);
}

// sharing: gdes: the residual tables get the discriminator's loss, the generator's tables the
// generator's loss only (compared with central differences of the generator's loss).
TEST_CASE("sharing: gdes step gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kElectra, 24, GeneratorKind::kMlm, Sharing::kGdes);
}

// training: two-stage: stage 1's update (the generator's MLM loss alone; every discriminator
// parameter's gradient exactly 0) and stage 2's (lambda x BCE over the discriminator's encoder
// and head; every generator parameter's gradient, the shared tables' included, exactly 0).
TEST_CASE("two-stage generator-stage gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kElectra, 24, GeneratorKind::kMlm, Sharing::kEmbeddings,
                       TrainingPhase::kGenerator);
}

TEST_CASE("two-stage discriminator-stage gradients equal central differences", "[gradcheck]") {
  check_step_gradients(Objective::kElectra, 24, GeneratorKind::kMlm, Sharing::kEmbeddings,
                       TrainingPhase::kDiscriminator);
}
