// generator_training: adversarial (docs/OBJECTIVES.md "Adversarial generator training") at the
// tiny shapes, on the CPU in f64: the stages run one by one so that a test can set the rewards
// (the discriminator's per-token loss) between discriminator_loss and adversarial_loss; the
// gradient check of the whole update is in pretrainer_gradcheck_test.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

PretrainOptions adversarial_options() {
  PretrainOptions o = test::tiny_options();
  o.generator_training = GeneratorTraining::kAdversarial;
  return o;
}

const char* const kBaseline = "generator/adversarial_baseline.";

bool is_baseline(const ParamInfo& p) {
  return p.name.rfind(kBaseline, 0) == 0;
}

// One adversarial micro-step from the tiny fixed corruption, optionally with every token's reward
// replaced by `reward` before the generator's gradient is formed; gradients zeroed first.
class Stages {
 public:
  Stages(Context& ctx, ElectraPretrainer& model)
      : model_(model),
        batch_(test::tiny_batch()),
        fixed_(ctx, model, batch_, test::tiny_corruption(batch_)) {}

  void run(Context& ctx, const double* reward = nullptr) {
    model_.zero_grads(ctx);
    fixed_.feed(ctx);
    model_.set_step(ctx, 0, 1.0f);
    const Corruption& c = fixed_.corruption();
    ForwardContext saved;
    saved.pass = DropoutPass{model_.rng(ctx, RngPurpose::kDropout), true};
    model_.generator_forward(ctx, c, saved.pass);
    model_.generator_loss(ctx, c, saved);
    model_.discriminator_forward(ctx, c, saved.samples, saved.pass);
    model_.discriminator_loss(ctx, c, saved);
    if (reward != nullptr) {
      const Tensor& loss = model_.discriminator_token_loss();
      upload_to(ctx, loss, std::vector<double>(static_cast<size_t>(loss.numel()), *reward));
    }
    model_.adversarial_loss(ctx, c, saved);
    saved.labels = model_.labels();
    model_.backward(ctx, saved);
  }

  const Corruption& corruption() const { return fixed_.corruption(); }

 private:
  ElectraPretrainer& model_;
  HostBatch batch_;
  test::FixedStep fixed_;
};

// The baseline's weight 0 and bias `c`: b = softplus(-c) at every slot.
void constant_baseline(ElectraPretrainer& model, double c) {
  double* flat = model.store().flat_params().ptr<double>();
  for (const ParamInfo& p : model.store().params()) {
    if (!is_baseline(p)) continue;
    for (int64_t j = 0; j < p.numel; ++j) flat[p.offset + j] = p.kind == ParamKind::kBias ? c : 0;
  }
}

double softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

// max |gradient| over the parameters named generator/ (the baseline's included).
double generator_grad_max(const ElectraPretrainer& model) {
  const double* g = model.store().flat_grads().ptr<double>();
  double m = 0;
  for (const ParamInfo& p : model.store().params()) {
    if (p.name.rfind("generator/", 0) != 0) continue;
    for (int64_t j = 0; j < p.numel; ++j) m = std::max(m, std::abs(g[p.offset + j]));
  }
  return m;
}

// Sum of log p_G(x^) over the used slots.
double sample_log_prob(Context& ctx, const ElectraPretrainer& model) {
  double s = 0;
  for (double x : download_as<double>(ctx, model.adversarial_slots().log_prob)) s += x;
  return s;
}

}  // namespace

TEST_CASE("adversarial: the baseline is a generator parameter, mle has none", "[adversarial]") {
  Context ctx = Context::cpu(1, Precision::F64);
  ElectraPretrainer adversarial(ctx, test::tiny_electra_config(), adversarial_options());
  CHECK(test::has_param(adversarial.store(), kBaseline));
  ElectraPretrainer mle(ctx, test::tiny_electra_config(), test::tiny_options());
  CHECK_FALSE(test::has_param(mle.store(), kBaseline));
  CHECK(adversarial.store().parameter_count() ==
        mle.store().parameter_count() + test::tiny_electra_config().generator().hidden + 1);
}

TEST_CASE("adversarial: a zero advantage gives the generator no gradient", "[adversarial]") {
  Context ctx = Context::cpu(1, Precision::F64);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), adversarial_options());
  model.init_weights(ctx, 4);
  constant_baseline(model, 0.3);
  Stages stages(ctx, model);
  stages.run(ctx);  // the discriminator's own rewards: advantages differ from 0
  CHECK(generator_grad_max(model) > 1e-6);
  const double b = softplus(-0.3);
  stages.run(ctx, &b);  // R = b at every slot: advantage 0, and the baseline is exact
  for (double a : download_as<double>(ctx, model.adversarial_slots().advantage)) {
    CHECK(a == Approx(0).margin(1e-15));
  }
  CHECK(generator_grad_max(model) <= 1e-15);
  // The discriminator still learns.
  double disc = 0;
  const double* g = model.store().flat_grads().ptr<double>();
  for (const ParamInfo& p : model.store().params()) {
    if (p.name.rfind("discriminator/discriminator_predictions.", 0) == 0) {
      for (int64_t j = 0; j < p.numel; ++j) disc = std::max(disc, std::abs(g[p.offset + j]));
    }
  }
  CHECK(disc > 1e-6);
}

TEST_CASE("adversarial: a positive advantage raises log p of the samples, a negative lowers it",
          "[adversarial]") {
  for (const double reward : {6.0, 0.01}) {  // above / below b = softplus(-0.3) = 0.85
    INFO("reward " << reward);
    Context ctx = Context::cpu(1, Precision::F64);
    ElectraPretrainer model(ctx, test::tiny_electra_config(), adversarial_options());
    model.init_weights(ctx, 4);
    constant_baseline(model, 0.3);
    Stages stages(ctx, model);
    stages.run(ctx, &reward);
    const double before = sample_log_prob(ctx, model);
    // One small gradient-descent step on the generator's own parameters.
    const ParameterStore& store = model.store();
    double* w = store.flat_params().ptr<double>();
    const double* g = store.flat_grads().ptr<double>();
    for (const ParamInfo& p : store.params()) {
      if (p.name.rfind("generator/", 0) != 0 || is_baseline(p)) continue;
      for (int64_t j = 0; j < p.numel; ++j) w[p.offset + j] -= 0.05 * g[p.offset + j];
    }
    stages.run(ctx, &reward);
    const double after = sample_log_prob(ctx, model);
    if (reward > softplus(-0.3)) {
      CHECK(after > before + 1e-4);
    } else {
      CHECK(after < before - 1e-4);
    }
  }
}

TEST_CASE("adversarial: the baseline learns the reward on a fixed input", "[adversarial]") {
  Context ctx = Context::cpu(1, Precision::F64);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), adversarial_options());
  model.init_weights(ctx, 4);
  constant_baseline(model, 3.0);  // b = 0.049 everywhere, far below the rewards (about 0.7)
  Stages stages(ctx, model);
  const std::vector<float> weights = download_as<float>(ctx, stages.corruption().weights);
  const ReinforceSlots& slots = model.adversarial_slots();
  // |b - R| per used slot, b = R - advantage, and the mean reward.
  auto errors = [&](double& mean_error, double& mean_b, double& mean_r) {
    const std::vector<double> r = download_as<double>(ctx, slots.reward);
    const std::vector<double> a = download_as<double>(ctx, slots.advantage);
    double n = 0;
    mean_error = mean_b = mean_r = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (weights[i] == 0) continue;
      n += 1;
      mean_error += std::abs(a[i]);
      mean_b += r[i] - a[i];
      mean_r += r[i];
    }
    mean_error /= n;
    mean_b /= n;
    mean_r /= n;
  };
  stages.run(ctx);
  double e0 = 0, b0 = 0, r0 = 0;
  errors(e0, b0, r0);
  // Gradient descent on the baseline alone: the rewards and its inputs stay fixed.
  const ParameterStore& store = model.store();
  double* w = store.flat_params().ptr<double>();
  const double* g = store.flat_grads().ptr<double>();
  for (int it = 0; it < 400; ++it) {
    for (const ParamInfo& p : store.params()) {
      if (!is_baseline(p)) continue;
      for (int64_t j = 0; j < p.numel; ++j) w[p.offset + j] -= 0.3 * g[p.offset + j];
    }
    stages.run(ctx);
  }
  double e1 = 0, b1 = 0, r1 = 0;
  errors(e1, b1, r1);
  INFO("mean |b - R| " << e0 << " -> " << e1 << "; mean b " << b0 << " -> " << b1 << ", mean R "
                       << r1);
  CHECK(r1 == Approx(r0).epsilon(1e-12));  // the rewards did not move
  CHECK(e1 < 0.05 * e0);
  CHECK(b1 == Approx(r1).epsilon(0.02));
}

TEST_CASE("adversarial: refused where it makes no sense", "[adversarial]") {
  Context ctx = Context::cpu(1, Precision::F64);
  for (Objective objective : {Objective::kMlm, Objective::kReplaceMlm, Objective::kAllTokensMlm}) {
    PretrainOptions o = adversarial_options();
    o.objective = objective;
    CHECK_THROWS_AS(ElectraPretrainer(ctx, test::tiny_electra_config(), o), UserError);
  }
  PretrainOptions unigram = adversarial_options();
  unigram.generator = GeneratorKind::kUnigram;
  CHECK_THROWS_AS(ElectraPretrainer(ctx, test::tiny_electra_config(), unigram), UserError);
  PretrainOptions hot = adversarial_options();
  hot.temperature = 2.0f;
  CHECK_THROWS_AS(ElectraPretrainer(ctx, test::tiny_electra_config(), hot), UserError);
  PretrainOptions fifteen = adversarial_options();
  fifteen.objective = Objective::kElectra15;
  CHECK_NOTHROW(ElectraPretrainer(ctx, test::tiny_electra_config(), fifteen));
}
