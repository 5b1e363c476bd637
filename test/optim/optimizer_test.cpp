// Optimizer (optim/optimizer.h) on the CPU against a double-precision transcription of the
// official ELECTRA AdamWeightDecayOptimizer (google-research/electra, model/optimization.py):
//   grads  = clip_by_global_norm(grads, 1.0)
//   m      = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
//   update = m / (sqrt(v) + eps) + wd * p   (wd only for parameters that are not LayerNorm/bias)
//   p     -= lr * update
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/context.h"
#include "engine/parameter_store.h"
#include "optim/optimizer.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// A store with a weight (decayed), a bias and a LayerNorm gamma (not decayed), all on the CPU;
// f32 parameters start random (padding included), gradients at zero.
struct Fixture {
  ParameterStore store;
  Arena params{"params", Device::CPU, 4096};
  Arena grads{"grads", Device::CPU, 4096};

  explicit Fixture(DType dtype = DType::F32) {
    store.add("dense.weight", {3, 5}, ParamKind::kWeight);
    store.add("dense.bias", {5}, ParamKind::kBias);
    store.add("LayerNorm.weight", {5}, ParamKind::kLayerNormGamma);
    store.allocate(params, grads, dtype);
    if (dtype == DType::F32) {
      const std::vector<float> init = test::random_vector<float>(static_cast<size_t>(n()), 7);
      std::memcpy(p(), init.data(), init.size() * sizeof(float));
      std::memset(g(), 0, init.size() * sizeof(float));
    }
  }
  float* p() const { return store.flat_params().ptr<float>(); }
  float* g() const { return store.flat_grads().ptr<float>(); }
  int64_t n() const { return store.total_elements(); }
};

// The official update in double for the store's parameters.
struct Reference {
  std::vector<double> p, m, v;
  std::vector<bool> decay, inside;  // per flat element: decayed; part of a parameter
  std::vector<int> segment;         // per flat element: parameter index
  int num_segments = 0;

  explicit Reference(const Fixture& f) {
    const size_t n = static_cast<size_t>(f.n());
    p.assign(f.p(), f.p() + n);
    m.assign(n, 0.0);
    v.assign(n, 0.0);
    decay.assign(n, false);
    inside.assign(n, false);
    segment.assign(n, -1);
    for (const ParamInfo& info : f.store.params()) {
      for (int64_t i = info.offset; i < info.offset + info.numel; ++i) {
        decay[i] = param_decays(info.kind);
        inside[i] = true;
        segment[i] = num_segments;
      }
      ++num_segments;
    }
  }

  // One step; lamb = per-parameter trust ratio ||p|| / ||update||.
  void step(const std::vector<float>& grad, const OptimizerConfig& c, int64_t t, bool lamb) {
    double norm_sq = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      if (inside[i]) norm_sq += double(grad[i]) * grad[i];
    }
    const double norm = std::sqrt(norm_sq);
    const double clip =
        c.max_grad_norm > 0 && norm > c.max_grad_norm ? c.max_grad_norm / norm : 1.0;
    const double lr = c.schedule.at(t);
    const double b1 = c.beta1, b2 = c.beta2;
    std::vector<double> update(p.size(), 0.0), p_sq(num_segments, 0.0), u_sq(num_segments, 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      if (!inside[i]) continue;
      const double gi = clip * grad[i];
      m[i] = b1 * m[i] + (1 - b1) * gi;
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;
      double mh = m[i], vh = v[i];
      if (c.bias_correction) {
        mh /= 1 - std::pow(b1, double(t + 1));
        vh /= 1 - std::pow(b2, double(t + 1));
      }
      update[i] = mh / (std::sqrt(vh) + double(c.eps));
      if (decay[i]) update[i] += double(c.weight_decay) * p[i];
      p_sq[segment[i]] += p[i] * p[i];
      u_sq[segment[i]] += update[i] * update[i];
    }
    for (size_t i = 0; i < p.size(); ++i) {
      if (!inside[i]) continue;
      const int s = segment[i];
      const double ratio = lamb && p_sq[s] > 0 && u_sq[s] > 0 ? std::sqrt(p_sq[s] / u_sq[s]) : 1.0;
      p[i] -= lr * ratio * update[i];
    }
  }
};

OptimizerConfig test_config() {
  OptimizerConfig c;
  c.schedule = LrSchedule{ScheduleKind::kLinear, 1e-2, 2, 10};
  return c;
}

// Random gradients scaled to the given global norm (over the parameters, not the padding).
std::vector<float> gradient(const Fixture& f, uint64_t seed, double norm) {
  std::vector<float> g = test::random_vector<float>(static_cast<size_t>(f.n()), seed);
  Reference layout(f);
  double sq = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!layout.inside[i]) g[i] = 0;
    sq += double(g[i]) * g[i];
  }
  for (float& x : g) x = static_cast<float>(x * norm / std::sqrt(sq));
  return g;
}

// Runs `steps` steps of the optimizer and of the reference on the same gradients; returns the
// largest relative parameter error.
double run_against_reference(const OptimizerConfig& c, bool lamb,
                             const std::vector<double>& grad_norms) {
  Context ctx = Context::cpu();
  Fixture f;
  const std::vector<float> init(f.p(), f.p() + f.n());
  Arena state("state", Device::CPU, Optimizer::state_bytes(f.store, c.kind));
  Optimizer opt(ctx, f.store, c, state);
  Reference ref(f);
  for (size_t t = 0; t < grad_norms.size(); ++t) {
    const std::vector<float> g = gradient(f, 100 + t, grad_norms[t]);
    std::memcpy(f.g(), g.data(), g.size() * sizeof(float));
    opt.step(ctx, static_cast<int64_t>(t));
    ref.step(g, c, static_cast<int64_t>(t), lamb);
    CHECK(opt.grad_norm(ctx) == Approx(grad_norms[t]).epsilon(1e-5));
  }
  std::vector<float> got(f.p(), f.p() + f.n());
  // Padding between parameters is never touched.
  for (size_t i = 0; i < got.size(); ++i) {
    if (!ref.inside[i]) CHECK(got[i] == init[i]);
  }
  return test::max_relative_error(got, ref.p);
}

}  // namespace

TEST_CASE("AdamW equals the official AdamWeightDecayOptimizer (no bias correction)",
          "[optimizer]") {
  const OptimizerConfig c = test_config();
  CHECK(c.kind == OptimizerKind::kAdamW);
  CHECK_FALSE(c.bias_correction);
  CHECK(c.eps == 1e-6f);
  CHECK(c.weight_decay == 0.01f);
  CHECK(run_against_reference(c, false, {0.3, 0.7, 0.5, 0.2, 0.9, 0.4}) < 1e-5);
}

TEST_CASE("AdamW with bias correction", "[optimizer]") {
  OptimizerConfig c = test_config();
  c.bias_correction = true;
  CHECK(run_against_reference(c, false, {0.3, 0.7, 0.5, 0.2}) < 1e-5);
  // The reference without correction is far from it: the option changes the update.
  OptimizerConfig plain = c;
  plain.bias_correction = false;
  Fixture f;
  Reference with(f), without(f);
  const std::vector<float> g = gradient(f, 3, 0.5);
  for (int64_t t = 0; t < 3; ++t) {
    with.step(g, c, t, false);
    without.step(g, plain, t, false);
  }
  CHECK(test::max_relative_error(without.p, with.p) > 1e-3);
}

TEST_CASE("LAMB scales each parameter's update by its trust ratio", "[optimizer]") {
  OptimizerConfig c = test_config();
  c.kind = OptimizerKind::kLamb;
  CHECK(run_against_reference(c, true, {0.3, 0.7, 0.5, 0.2}) < 1e-5);

  // One step by hand on the weight alone: its displacement has norm lr * ||p||.
  Context ctx = Context::cpu();
  Fixture f;
  const std::vector<float> init(f.p(), f.p() + f.n());
  const std::vector<float> g = gradient(f, 12, 0.5);
  std::memcpy(f.g(), g.data(), g.size() * sizeof(float));
  c.schedule = LrSchedule{ScheduleKind::kConstant, 1e-2, 0, 10};
  Arena state("state", Device::CPU, Optimizer::state_bytes(f.store, c.kind));
  Optimizer opt(ctx, f.store, c, state);
  opt.step(ctx, 0);
  const ParamInfo& w = f.store.info("dense.weight");
  double moved = 0, before = 0;
  for (int64_t i = w.offset; i < w.offset + w.numel; ++i) {
    moved += std::pow(double(f.p()[i]) - init[i], 2);
    before += double(init[i]) * init[i];
  }
  CHECK(std::sqrt(moved) == Approx(1e-2 * std::sqrt(before)).epsilon(1e-4));
}

TEST_CASE("global-norm clipping scales a gradient whose norm exceeds max_grad_norm",
          "[optimizer]") {
  const OptimizerConfig c = test_config();
  REQUIRE(c.max_grad_norm == 1.0f);
  // Norms 40 and 3 are clipped to 1; 0.5 is not.
  const std::vector<double> norms = {40.0, 3.0, 0.5, 0.8};
  CHECK(run_against_reference(c, false, norms) < 1e-5);
  // Without clipping the parameters would differ: the test above can tell.
  Fixture f;
  OptimizerConfig off = c;
  off.max_grad_norm = 0;
  Reference clipped(f), unclipped(f);
  for (size_t t = 0; t < norms.size(); ++t) {
    const std::vector<float> g = gradient(f, 100 + t, norms[t]);
    clipped.step(g, c, static_cast<int64_t>(t), false);
    unclipped.step(g, off, static_cast<int64_t>(t), false);
  }
  CHECK(test::max_relative_error(unclipped.p, clipped.p) > 1e-3);
  // max_grad_norm = 0 disables clipping in the optimizer too.
  CHECK(run_against_reference(off, false, norms) < 1e-5);
}

TEST_CASE("the learning rate follows the schedule", "[optimizer]") {
  Context ctx = Context::cpu();
  Fixture f;
  OptimizerConfig c = test_config();
  c.weight_decay = 0;
  Arena state("state", Device::CPU, Optimizer::state_bytes(f.store, c.kind));
  Optimizer opt(ctx, f.store, c, state);
  for (int64_t t : {0, 1, 2, 5, 9, 10, 20}) CHECK(opt.lr_at(t) == c.schedule.at(t));
  const std::vector<float> init(f.p(), f.p() + f.n());
  const std::vector<float> g = gradient(f, 5, 0.5);
  std::memcpy(f.g(), g.data(), g.size() * sizeof(float));
  // Step 0 has lr = 0 (warm-up): nothing moves.
  opt.step(ctx, 0);
  CHECK(std::vector<float>(f.p(), f.p() + f.n()) == init);
  // Step 5: lr = 1e-2 * 1 * (1 - 5/10); with the same gradient twice, m = g(1 - b1^2) and
  // v = g^2 (1 - b2^2), so each element moves by lr * (1 - b1^2) g / (sqrt(1 - b2^2) |g| + eps).
  opt.step(ctx, 5);
  const double lr = 5e-3;
  const ParamInfo& b = f.store.info("dense.bias");
  for (int64_t i = b.offset; i < b.offset + b.numel; ++i) {
    const double expected =
        lr * (1 - 0.81) * g[i] / (std::sqrt(1 - 0.999 * 0.999) * std::abs(g[i]) + 1e-6);
    CHECK(init[i] - f.p()[i] == Approx(expected).epsilon(1e-4));
  }
}

TEST_CASE("moments start at zero and the state takes exactly state_bytes", "[optimizer]") {
  Context ctx = Context::cpu();
  Fixture f;
  for (OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    const size_t bytes = Optimizer::state_bytes(f.store, kind);
    Arena state("state", Device::CPU, bytes);
    // Poison the whole arena first so that zeros are the optimizer's doing.
    Tensor all = state.alloc<float>({static_cast<int64_t>(bytes / sizeof(float))});
    poison_tensor(ctx.stream(), all);
    state.reset();
    OptimizerConfig c = test_config();
    c.kind = kind;
    Optimizer opt(ctx, f.store, c, state);
    CHECK(state.used() == bytes);
    for (const Tensor* t : {&opt.m(), &opt.v()}) {
      REQUIRE(t->numel() == f.n());
      const float* x = t->ptr<float>();
      for (int64_t i = 0; i < f.n(); ++i) REQUIRE(x[i] == 0.0f);
    }
  }
}

TEST_CASE("lr_mult scales each parameter's step", "[optimizer]") {
  Context ctx = Context::cpu();
  Fixture f;
  const std::vector<float> init(f.p(), f.p() + f.n());
  const std::vector<float> g = gradient(f, 9, 0.5);
  std::memcpy(f.g(), g.data(), g.size() * sizeof(float));
  OptimizerConfig c = test_config();
  Arena state("state", Device::CPU, Optimizer::state_bytes(f.store, c.kind));
  Optimizer opt(ctx, f.store, c, state,
                [](const ParamInfo& p) { return p.kind == ParamKind::kBias ? 0.0f : 1.0f; });
  opt.step(ctx, 1);
  const ParamInfo& b = f.store.info("dense.bias");
  const ParamInfo& w = f.store.info("dense.weight");
  for (int64_t i = b.offset; i < b.offset + b.numel; ++i) CHECK(f.p()[i] == init[i]);
  for (int64_t i = w.offset; i < w.offset + w.numel; ++i) CHECK(f.p()[i] != init[i]);
}

// Two-stage pre-training freezes one model: with weight decay on and a non-zero gradient, a
// frozen parameter and its moments stay bit-identical (AdamW and LAMB); the others move; after
// set_frozen with nothing frozen the parameter moves again.
TEST_CASE("set_frozen leaves a frozen parameter and its moments untouched", "[optimizer]") {
  for (OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    INFO(optimizer_kind_name(kind));
    Context ctx = Context::cpu();
    Fixture f;
    OptimizerConfig c = test_config();
    c.kind = kind;
    REQUIRE(c.weight_decay > 0);
    Arena state("state", Device::CPU, Optimizer::state_bytes(f.store, c.kind));
    Optimizer opt(ctx, f.store, c, state);
    const ParamInfo& w = f.store.info("dense.weight");
    const ParamInfo& b = f.store.info("dense.bias");
    // One unfrozen update first, so that the moments are not zero.
    const std::vector<float> g = gradient(f, 9, 0.5);
    std::memcpy(f.g(), g.data(), g.size() * sizeof(float));
    opt.step(ctx, 0);
    opt.set_frozen(ctx, [](const ParamInfo& p) { return p.name == "dense.weight"; });
    const std::vector<float> p0(f.p(), f.p() + f.n());
    const std::vector<float> m0(opt.m().ptr<float>(), opt.m().ptr<float>() + f.n());
    const std::vector<float> v0(opt.v().ptr<float>(), opt.v().ptr<float>() + f.n());
    for (int t = 1; t < 4; ++t) opt.step(ctx, t);
    for (int64_t i = w.offset; i < w.offset + w.numel; ++i) {
      REQUIRE(f.p()[i] == p0[i]);
      REQUIRE(opt.m().ptr<float>()[i] == m0[i]);
      REQUIRE(opt.v().ptr<float>()[i] == v0[i]);
    }
    for (int64_t i = b.offset; i < b.offset + b.numel; ++i) CHECK(f.p()[i] != p0[i]);
    opt.set_frozen(ctx, [](const ParamInfo&) { return false; });
    opt.step(ctx, 4);
    for (int64_t i = w.offset; i < w.offset + w.numel; ++i) CHECK(f.p()[i] != p0[i]);
  }
}

TEST_CASE("an f64 ParameterStore is refused", "[optimizer]") {
  Context ctx = Context::cpu();
  Fixture f(DType::F64);
  Arena state("state", Device::CPU, 1 << 16);
  CHECK_THROWS_WITH(Optimizer(ctx, f.store, test_config(), state),
                    Catch::Contains("f64") && Catch::Contains("f32"));
}

TEST_CASE("read_optimizer_config reads and validates the YAML sections", "[optimizer]") {
  ConfigNode root = ConfigNode::parse(
      "optimizer: {kind: lamb, lr: 2e-4, beta1: 0.8, beta2: 0.99, eps: 1e-8, weight_decay: 0.1,\n"
      "            bias_correction: true, max_grad_norm: 0.5}\n"
      "schedule: {kind: cosine, warmup_steps: 100}\n",
      "opt.yaml");
  const OptimizerConfig c =
      read_optimizer_config(root.section("optimizer"), root.section("schedule"), 5000);
  root.finish();
  CHECK(c.kind == OptimizerKind::kLamb);
  CHECK(c.schedule.peak == 2e-4);
  CHECK(c.beta1 == 0.8f);
  CHECK(c.beta2 == 0.99f);
  CHECK(c.eps == 1e-8f);
  CHECK(c.weight_decay == 0.1f);
  CHECK(c.bias_correction);
  CHECK(c.max_grad_norm == 0.5f);
  CHECK(c.schedule.kind == ScheduleKind::kCosine);
  CHECK(c.schedule.warmup_steps == 100);
  CHECK(c.schedule.total_steps == 5000);

  // Defaults are the official ones.
  ConfigNode empty = ConfigNode::parse("", "empty.yaml");
  const OptimizerConfig d =
      read_optimizer_config(empty.section("optimizer"), empty.section("schedule"), 10);
  CHECK(d.kind == OptimizerKind::kAdamW);
  CHECK(d.schedule.kind == ScheduleKind::kLinear);
  CHECK(d.schedule.peak == 5e-4);
  CHECK(d.schedule.warmup_steps == 10000);

  auto fails = [](const std::string& text, const std::string& message) {
    ConfigNode bad = ConfigNode::parse(text, "bad.yaml");
    CHECK_THROWS_WITH(read_optimizer_config(bad.section("optimizer"), bad.section("schedule"), 10),
                      Catch::Contains(message));
  };
  fails("optimizer: {lr: -1}", "optimizer.lr must be positive");
  fails("optimizer: {beta2: 1.0}", "optimizer.beta2 must be in [0, 1)");
  fails("optimizer: {kind: sgd}", "optimizer.kind");
  fails("optimizer: {bias_correction: yes}", "optimizer.bias_correction");
  fails("schedule: {warmup_steps: -5}", "schedule.warmup_steps must be non-negative");
  fails("schedule: {kind: step}", "schedule.kind");
}
