// The whole pre-training step in float64 on the CPU (issue 4): every parameter's gradient,
// the shared embedding tables included (they receive both losses), against central differences
// of the total loss gen + 50 * disc.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

TEST_CASE("pre-training step gradients equal central differences in float64", "[gradcheck]") {
  Context ctx = Context::cpu(17, Precision::F64);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), test::tiny_options());
  model.init_weights(ctx, 3);
  // Larger random biases and LayerNorm parameters than the init, so that no gradient vanishes
  // by symmetry (zero biases, unit gammas).
  const ParameterStore& store = model.store();
  double* flat = store.flat_params().ptr<double>();
  {
    const std::vector<double> noise =
        test::random_vector<double>(static_cast<size_t>(store.total_elements()), 11, -0.2, 0.2);
    for (const ParamInfo& p : store.params()) {
      const bool small = p.kind != ParamKind::kWeight && p.kind != ParamKind::kEmbedding;
      for (int64_t j = 0; j < p.numel; ++j) {
        flat[p.offset + j] += small ? noise[p.offset + j] : 2 * noise[p.offset + j];
      }
    }
  }
  const HostBatch batch = test::tiny_batch();
  test::FixedStep fixed(ctx, model, batch, test::tiny_corruption(batch));

  model.zero_grads(ctx);
  fixed.run(ctx, 0);
  const StepMetrics base = model.metrics(ctx);
  REQUIRE(std::isfinite(base.total_loss));
  CHECK(base.replaced_fraction > 0);
  const std::vector<double> analytic(store.flat_grads().ptr<double>(),
                                     store.flat_grads().ptr<double>() + store.total_elements());

  auto loss = [&]() {
    fixed.run(ctx, 0);
    return model.metrics(ctx).total_loss;
  };
  const double h = 1e-5;
  for (const ParamInfo& p : store.params()) {
    // Up to 128 evenly spaced coordinates per tensor, all of them for small tensors.
    const int64_t stride = std::max<int64_t>(1, p.numel / 128);
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
    if (p.name.find("key.bias") != std::string::npos) {
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
