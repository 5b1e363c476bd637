// Loss scaling (optim/loss_scaler.h, issue 9) on the CPU in f32: the scaler's schedule, the
// optimizer's unscaling (grad_scale folded into the clip factor) and overflow skip, and whole
// pre-training updates with S = 2^k against S = 1, which must agree bit for bit (scaling by a power
// of two is exact unless something overflows).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/context.h"
#include "optim/loss_scaler.h"
#include "optim/optimizer.h"
#include "test/common/test_util.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.ptr<float>(), t.ptr<float>() + t.numel());
}

OptimizerConfig optimizer_config(OptimizerKind kind, float max_grad_norm) {
  OptimizerConfig c;
  c.kind = kind;
  c.max_grad_norm = max_grad_norm;
  c.schedule.peak = 1e-2;
  c.schedule.warmup_steps = 0;
  c.schedule.total_steps = 100;
  return c;
}

// A weight, a bias and a LayerNorm gamma with random f32 values (seed 3), and an optimizer.
struct Fixture {
  ParameterStore store;
  Arena params{"params", Device::CPU, 4096};
  Arena grads{"grads", Device::CPU, 4096};
  Arena state{"state", Device::CPU, 16384};
  Optimizer optimizer;

  Fixture(Context& ctx, OptimizerKind kind, float max_grad_norm)
      : optimizer(make(ctx, kind, max_grad_norm)) {}

  Optimizer make(Context& ctx, OptimizerKind kind, float max_grad_norm) {
    store.add("dense.weight", {4, 6}, ParamKind::kWeight);
    store.add("dense.bias", {6}, ParamKind::kBias);
    store.add("LayerNorm.weight", {6}, ParamKind::kLayerNormGamma);
    store.allocate(params, grads);
    const std::vector<float> init =
        test::random_vector<float>(static_cast<size_t>(store.total_elements()), 3);
    std::copy(init.begin(), init.end(), store.flat_params().ptr<float>());
    zero_tensor(ctx.stream(), store.flat_grads());
    return Optimizer(ctx, store, optimizer_config(kind, max_grad_norm), state);
  }

  // Writes scale * g into the parameters' gradients (the padding stays 0).
  void set_grads(const std::vector<float>& g, float scale) {
    float* out = store.flat_grads().ptr<float>();
    for (const ParamInfo& p : store.params()) {
      for (int64_t i = p.offset; i < p.offset + p.numel; ++i) out[i] = scale * g[i];
    }
  }
};

}  // namespace

TEST_CASE("LossScaler doubles S after growth_interval good updates and halves it on overflow",
          "[loss_scaler]") {
  LossScalerConfig c;
  c.initial_scale = 8;
  c.growth_interval = 3;
  c.min_scale = 2;
  c.max_scale = 32;
  LossScaler s(c);
  CHECK(s.scale() == 8);
  CHECK(s.grad_scale() == 0.125f);
  CHECK(s.update(1.5f));
  CHECK(s.update(0.0f));
  CHECK(s.scale() == 8);
  CHECK(s.good_steps() == 2);
  CHECK(s.update(1.0f));  // the third good update in a row
  CHECK(s.scale() == 16);
  CHECK(s.good_steps() == 0);
  CHECK(s.update(1.0f));
  CHECK_FALSE(s.update(std::numeric_limits<float>::infinity()));
  CHECK(s.scale() == 8);
  CHECK(s.good_steps() == 0);  // an overflow restarts the count
  CHECK_FALSE(s.update(std::numeric_limits<float>::quiet_NaN()));
  CHECK(s.scale() == 4);
  CHECK_FALSE(s.update(std::numeric_limits<float>::infinity()));
  CHECK_FALSE(s.update(std::numeric_limits<float>::infinity()));
  CHECK(s.scale() == 2);  // min_scale
  for (int i = 0; i < 30; ++i) s.update(1.0f);
  CHECK(s.scale() == 32);  // max_scale

  LossScaler defaults;
  CHECK(defaults.scale() == 65536.0f);
  for (int i = 0; i < 1999; ++i) defaults.update(1.0f);
  CHECK(defaults.scale() == 65536.0f);
  defaults.update(1.0f);
  CHECK(defaults.scale() == 131072.0f);
}

TEST_CASE("a static loss scale never changes, and bad scaler configs are refused",
          "[loss_scaler]") {
  LossScalerConfig fixed;
  fixed.dynamic = false;
  fixed.initial_scale = 1000;  // any positive value when static
  LossScaler s(fixed);
  CHECK_FALSE(s.update(std::numeric_limits<float>::infinity()));
  CHECK(s.update(3.0f));
  CHECK(s.scale() == 1000);

  LossScalerConfig c;
  c.initial_scale = 1000;  // dynamic: not a power of two
  CHECK_THROWS_AS(LossScaler(c), Error);
  c = LossScalerConfig{};
  c.growth_interval = 0;
  CHECK_THROWS_AS(LossScaler(c), Error);
  c = LossScalerConfig{};
  c.min_scale = 0;
  CHECK_THROWS_AS(LossScaler(c), Error);
  c = LossScalerConfig{};
  c.initial_scale = c.max_scale * 2;
  CHECK_THROWS_AS(LossScaler(c), Error);
}

TEST_CASE("the optimizer unscales gradients scaled by S = 2^k to the bits of S = 1",
          "[loss_scaler]") {
  for (const OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    // Clipping active (the gradients' norm is about 2.4), inactive, and off.
    for (const float max_norm : {1.0f, 100.0f, 0.0f}) {
      for (const float scale : {1024.0f, 65536.0f, 0.25f}) {
        INFO(optimizer_kind_name(kind) << ", max_grad_norm " << max_norm << ", S " << scale);
        Context ctx = Context::cpu();
        Fixture plain(ctx, kind, max_norm), scaled(ctx, kind, max_norm);
        for (int64_t t = 0; t < 4; ++t) {
          const std::vector<float> g = test::random_vector<float>(
              static_cast<size_t>(plain.store.total_elements()), 20 + static_cast<uint64_t>(t));
          plain.set_grads(g, 1.0f);
          scaled.set_grads(g, scale);
          plain.optimizer.step(ctx, t);
          scaled.optimizer.step(ctx, t, 1.0f / scale);
          CHECK(scaled.optimizer.grad_norm(ctx) == plain.optimizer.grad_norm(ctx));
          CHECK(values(scaled.store.flat_params()) == values(plain.store.flat_params()));
          CHECK(values(scaled.optimizer.m()) == values(plain.optimizer.m()));
          CHECK(values(scaled.optimizer.v()) == values(plain.optimizer.v()));
        }
      }
    }
  }
}

TEST_CASE("an Inf or NaN gradient skips the update bit-exactly and halves S", "[loss_scaler]") {
  for (const OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    INFO(optimizer_kind_name(kind));
    Context ctx = Context::cpu();
    Fixture f(ctx, kind, 1.0f);
    LossScaler scaler;
    const std::vector<float> g =
        test::random_vector<float>(static_cast<size_t>(f.store.total_elements()), 5);
    // One good update first, so that the moments are not zero.
    f.set_grads(g, scaler.scale());
    f.optimizer.step(ctx, 0, scaler.grad_scale());
    REQUIRE(scaler.update(f.optimizer.grad_norm(ctx)));
    for (const float bad :
         {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      const std::vector<float> p = values(f.store.flat_params()), m = values(f.optimizer.m()),
                               v = values(f.optimizer.v());
      const float before = scaler.scale();
      f.set_grads(g, scaler.scale());
      f.store.flat_grads().ptr<float>()[f.store.info("dense.bias").offset + 2] = bad;
      f.optimizer.step(ctx, 1, scaler.grad_scale());
      const float norm = f.optimizer.grad_norm(ctx);
      CHECK_FALSE(std::isfinite(norm));
      CHECK_FALSE(scaler.update(norm));
      CHECK(scaler.scale() == before / 2);
      CHECK(values(f.store.flat_params()) == p);
      CHECK(values(f.optimizer.m()) == m);
      CHECK(values(f.optimizer.v()) == v);
    }
    // A finite gradient updates again.
    const std::vector<float> p = values(f.store.flat_params());
    f.set_grads(g, scaler.scale());
    f.optimizer.step(ctx, 1, scaler.grad_scale());
    CHECK(scaler.update(f.optimizer.grad_norm(ctx)));
    CHECK(values(f.store.flat_params()) != p);
  }
}

TEST_CASE("pre-training with a dynamic loss scale equals S = 1 bit for bit in f32",
          "[loss_scaler]") {
  for (const OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    INFO(optimizer_kind_name(kind));
    Context ctx = Context::cpu(9);
    const ElectraConfig config = test::tiny_electra_config(0.1f);
    ElectraPretrainer plain(ctx, config, test::tiny_options());
    ElectraPretrainer scaled(ctx, config, test::tiny_options());
    plain.init_weights(ctx, 4);
    scaled.init_weights(ctx, 4);
    const OptimizerConfig oc = optimizer_config(kind, 1.0f);
    Arena plain_state("state", Device::CPU, Optimizer::state_bytes(plain.store(), kind));
    Arena scaled_state("state", Device::CPU, Optimizer::state_bytes(scaled.store(), kind));
    Optimizer plain_opt(ctx, plain.store(), oc, plain_state);
    Optimizer scaled_opt(ctx, scaled.store(), oc, scaled_state);
    LossScalerConfig lc;
    lc.initial_scale = 4096;
    lc.growth_interval = 2;  // S grows during the run: 2^12, 2^12, 2^13, 2^13, 2^14
    LossScaler scaler(lc);
    const HostBatch batch = test::tiny_batch();
    for (int64_t t = 0; t < 5; ++t) {
      INFO("update " << t << ", S " << scaler.scale());
      const float s = scaler.scale();
      plain.zero_grads(ctx);
      scaled.zero_grads(ctx);
      // Two micro-batches of half weight, as with gradient accumulation.
      for (uint32_t micro = 0; micro < 2; ++micro) {
        plain.step(ctx, batch, static_cast<uint32_t>(2 * t) + micro, 0.5f);
        scaled.step(ctx, batch, static_cast<uint32_t>(2 * t) + micro, 0.5f * s);
      }
      // Losses are reported unscaled; the gradients are exactly S times larger.
      CHECK(scaled.metrics(ctx).total_loss == plain.metrics(ctx).total_loss);
      const std::vector<float> gp = values(plain.store().flat_grads());
      const std::vector<float> gs = values(scaled.store().flat_grads());
      bool exact = true;
      for (size_t i = 0; i < gp.size(); ++i) exact = exact && gs[i] == s * gp[i];
      CHECK(exact);
      plain_opt.step(ctx, t);
      scaled_opt.step(ctx, t, scaler.grad_scale());
      const float norm = scaled_opt.grad_norm(ctx);
      CHECK(norm == plain_opt.grad_norm(ctx));
      CHECK(scaler.update(norm));
      CHECK(values(scaled.store().flat_params()) == values(plain.store().flat_params()));
    }
    CHECK(scaler.scale() == 16384);
  }
}
