// Loss scaling on the GPU (issue 9): the CUDA optimizer kernels unscale S = 2^k gradients to the
// bits of S = 1 (AdamW and LAMB, clipping active), and an Inf or NaN gradient leaves parameters
// and moments untouched, decided on the device from the norm.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "optim/loss_scaler.h"
#include "optim/optimizer.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// A weight spanning several optimizer chunks, a bias and a gamma on the GPU, random (seed 3).
struct GpuFixture {
  ParameterStore store;
  Arena params, grads, state;
  Optimizer optimizer;

  GpuFixture(Context& ctx, OptimizerKind kind)
      : store(layout()),
        params("params", Device::CUDA, store.bytes_needed()),
        grads("grads", Device::CUDA, store.bytes_needed()),
        state("state", Device::CUDA, Optimizer::state_bytes(store, kind)),
        optimizer(make(ctx, kind)) {}

  static ParameterStore layout() {
    ParameterStore s;
    s.add("dense.weight", {96, 100}, ParamKind::kWeight);
    s.add("dense.bias", {100}, ParamKind::kBias);
    s.add("LayerNorm.weight", {100}, ParamKind::kLayerNormGamma);
    return s;
  }

  Optimizer make(Context& ctx, OptimizerKind kind) {
    store.allocate(params, grads);
    std::vector<float> init =
        test::random_vector<float>(static_cast<size_t>(store.total_elements()), 3);
    copy_tensor(ctx.stream(), store.flat_params(),
                Tensor::view_of(init.data(), Device::CPU, {store.total_elements()}));
    zero_tensor(ctx.stream(), store.flat_grads());
    OptimizerConfig c;
    c.kind = kind;
    c.max_grad_norm = 1.0f;  // the gradients' norm is about 57: clipping is active
    c.schedule.peak = 1e-2;
    c.schedule.warmup_steps = 0;
    c.schedule.total_steps = 100;
    return Optimizer(ctx, store, c, state);
  }

  // Uploads scale * g into the parameters' gradients (the alignment gaps stay 0).
  void set_grads(Context& ctx, const std::vector<float>& g, float scale) {
    std::vector<float> flat(static_cast<size_t>(store.total_elements()), 0.0f);
    for (const ParamInfo& p : store.params()) {
      for (int64_t i = p.offset; i < p.offset + p.numel; ++i) flat[i] = scale * g[i];
    }
    copy_tensor(ctx.stream(), store.flat_grads(),
                Tensor::view_of(flat.data(), Device::CPU, {store.total_elements()}));
  }
};

}  // namespace

TEST_CASE("CUDA: S = 2^k gradients update to the bits of S = 1", "[loss_scaler][gpu]") {
  for (const OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    INFO(optimizer_kind_name(kind));
    Context ctx = Context::cuda(0);
    GpuFixture plain(ctx, kind), scaled(ctx, kind);
    const float scale = 65536.0f;
    for (int64_t t = 0; t < 3; ++t) {
      const std::vector<float> g = test::random_vector<float>(
          static_cast<size_t>(plain.store.total_elements()), 30 + static_cast<uint64_t>(t));
      plain.set_grads(ctx, g, 1.0f);
      scaled.set_grads(ctx, g, scale);
      plain.optimizer.step(ctx, t);
      scaled.optimizer.step(ctx, t, 1.0f / scale);
      CHECK(scaled.optimizer.grad_norm(ctx) == plain.optimizer.grad_norm(ctx));
      CHECK(test::download<float>(ctx, scaled.store.flat_params()) ==
            test::download<float>(ctx, plain.store.flat_params()));
      CHECK(test::download<float>(ctx, scaled.optimizer.v()) ==
            test::download<float>(ctx, plain.optimizer.v()));
    }
  }
}

TEST_CASE("CUDA: an Inf or NaN gradient skips the update on the device", "[loss_scaler][gpu]") {
  for (const OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    INFO(optimizer_kind_name(kind));
    Context ctx = Context::cuda(0);
    GpuFixture f(ctx, kind);
    LossScaler scaler;
    std::vector<float> g =
        test::random_vector<float>(static_cast<size_t>(f.store.total_elements()), 5);
    f.set_grads(ctx, g, scaler.scale());
    f.optimizer.step(ctx, 0, scaler.grad_scale());
    REQUIRE(scaler.update(f.optimizer.grad_norm(ctx)));
    for (const float bad :
         {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      const std::vector<float> p = test::download<float>(ctx, f.store.flat_params());
      const std::vector<float> m = test::download<float>(ctx, f.optimizer.m());
      const std::vector<float> v = test::download<float>(ctx, f.optimizer.v());
      std::vector<float> poisoned = g;
      poisoned[static_cast<size_t>(f.store.info("dense.weight").offset + 5000)] = bad;
      f.set_grads(ctx, poisoned, scaler.scale());
      f.optimizer.step(ctx, 1, scaler.grad_scale());
      const float norm = f.optimizer.grad_norm(ctx);
      CHECK_FALSE(std::isfinite(norm));
      CHECK_FALSE(scaler.update(norm));
      CHECK(test::download<float>(ctx, f.store.flat_params()) == p);
      CHECK(test::download<float>(ctx, f.optimizer.m()) == m);
      CHECK(test::download<float>(ctx, f.optimizer.v()) == v);
    }
    CHECK(scaler.scale() == 16384.0f);
  }
}
