// The full pre-training step on the GPU against the CPU reference: in f32 the same RNG
// key gives the same masking and samples and the same losses and gradients to 1e-5; in bf16,
// with the CPU's masking and samples fixed (bf16 logits may tip a near-tie sample), within 2e-2;
// "sharing: all" in bf16 within 2e-2 per model's contribution to a tied gradient, the query
// gradients within 2e-2 of the scale of their terms (check_tied_grads).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "test/common/device_util.h"
#include "test/models/query_grad_scale.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

std::vector<float> host_params(Context& ctx, const ElectraPretrainer& model) {
  return test::download<float>(ctx, model.store().flat_params());
}

// Copies the CPU model's master weights into the GPU model (same layout).
void copy_weights(Context& gpu, ElectraPretrainer& to, const ElectraPretrainer& from) {
  copy_tensor(gpu.stream(), to.store().flat_params(), from.store().flat_params());
  to.weights().refresh_compute(gpu);
}

// Per parameter: max |gpu - cpu| / max |cpu| over the tensor.
void check_grads(Context& gpu, const ElectraPretrainer& g, Context& cpu, const ElectraPretrainer& c,
                 double tolerance) {
  for (const ParamInfo& p : c.store().params()) {
    const std::vector<float> want = test::download<float>(cpu, c.store().grad(p.name));
    const std::vector<float> got = test::download<float>(gpu, g.store().grad(p.name));
    INFO(p.name);
    if (p.name.find("key.bias") != std::string::npos) continue;  // exactly zero in theory
    CHECK(test::normwise_error(got, want) < tolerance);
  }
}

// The gradient of every parameter after one fixed step of `options` on `ctx` (the GPU or the CPU)
// from the weights of `from` (a CPU model), keyed by name.
std::map<std::string, std::vector<float>> fixed_step_grads(Context& ctx, Context& cpu,
                                                           const ElectraPretrainer& from,
                                                           const ElectraConfig& config,
                                                           const PretrainOptions& options,
                                                           const test::FixedCorruption& fixed) {
  ElectraPretrainer m(ctx, config, options);
  if (ctx.is_cuda()) {
    copy_weights(ctx, m, from);
  } else {
    m.init_weights(cpu, 4);
  }
  test::FixedStep step(ctx, m, test::tiny_batch(), fixed);
  m.zero_grads(ctx);
  step.run(ctx, 2);
  std::map<std::string, std::vector<float>> grads;
  for (const ParamInfo& p : m.store().params()) {
    grads[p.name] = test::download<float>(ctx, m.store().grad(p.name));
  }
  return grads;
}

// max_i |a_i - b_i| (b empty: max_i |a_i|).
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b = {}) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - (b.empty() ? 0.0 : b[i])));
  }
  return worst;
}

// "sharing: all" in bf16: each tied gradient is the generator's contribution G plus the
// discriminator's D, and where they cancel (max|G + D| well below max|G| + max|D|) the bf16
// roundings of each are magnified in the sum. The 2026-11-27 H100 run:
// layer.0.attention.self.query.bias had max|G| 1.63e-7, max|D| 2.56e-7, max|G + D| 1.86e-7, G and D
// each within 1.7% and 0.9% of the CPU's, the sum 2.57% (the GPU in f32: 1.4e-6, so no defect). So
// here each contribution is held to `tolerance`: G from a step with disc_weight = 0 (the
// discriminator's loss then has no gradient), D as the whole minus G, on both devices; then
// |err(G + D)| <= tolerance (max|G| + max|D|), and the whole is held to
// tolerance (max|G| + max|D|) / max|G + D|. A gradient written by one model only is held to
// `tolerance` itself. Errors are normwise (max |got - want| / max |want|) like check_grads.
// The query gradients cancel once more inside G (query_grad_scale.h: dS's rows sum to zero), so G
// of a query parameter is held to `tolerance` of the scale of its terms, measured on the CPU's
// generator-only step, instead of max|G|. Emulated on the CPU (2026-11-28, test/simt), layer 1's
// query bias had G within 2.9% of max|G| but 0.32% of that scale, which is 9.2 max|G|: less than
// one bf16 rounding of the terms. An error in dQ itself is the f32 check's (1e-5) and
// attention_gpu_test's to find.
void check_tied_grads(Context& gpu, Context& cpu, const ElectraPretrainer& c,
                      const ElectraConfig& config, const PretrainOptions& options,
                      const test::FixedCorruption& fixed, double tolerance) {
  PretrainOptions generator_only = options;
  generator_only.disc_weight = 0;
  const auto cpu_all = fixed_step_grads(cpu, cpu, c, config, options, fixed);
  test::QueryGradScale query_scale(config.discriminator.layers);
  std::map<std::string, std::vector<float>> cpu_gen;
  {
    const ObserveOps observe(&query_scale);
    cpu_gen = fixed_step_grads(cpu, cpu, c, config, generator_only, fixed);
  }
  const auto gpu_all = fixed_step_grads(gpu, cpu, c, config, options, fixed);
  const auto gpu_gen = fixed_step_grads(gpu, cpu, c, config, generator_only, fixed);
  int tied = 0, queries = 0;
  for (const auto& [name, want] : cpu_all) {
    if (name.find("key.bias") != std::string::npos) continue;  // exactly zero in theory
    INFO(name);
    const std::vector<float>& got = gpu_all.at(name);
    const std::vector<float>& want_g = cpu_gen.at(name);
    std::vector<float> want_d(want.size()), got_d(want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      want_d[i] = want[i] - want_g[i];
      got_d[i] = got[i] - gpu_gen.at(name)[i];
    }
    const double g_max = max_abs_diff(want_g), d_max = max_abs_diff(want_d);
    if (g_max == 0 || d_max == 0) {  // one model's only
      CHECK(test::normwise_error(got, want) < tolerance);
      continue;
    }
    ++tied;
    // G's scale: the scale of its terms for a query parameter (at least max|G|), else max|G|.
    const double query = query_scale.scale_of(name);
    const double g_scale = query > 0 ? query : g_max;
    queries += query > 0;
    INFO("max|G| " << g_max << " (scale " << g_scale << "), max|D| " << d_max << ", max|G + D| "
                   << max_abs_diff(want));
    CHECK(g_scale >= g_max * (1 - 1e-5));  // a sum is at most the sum of its terms' sizes
    CHECK(test::normwise_error(gpu_gen.at(name), want_g) < tolerance * g_scale / g_max);
    CHECK(test::normwise_error(got_d, want_d) < tolerance);
    CHECK(test::normwise_error(got, want) < tolerance * (g_scale + d_max) / max_abs_diff(want));
  }
  CHECK(tied > 0);  // sharing all ties the encoder: both models write most gradients
  CHECK(queries == 2 * config.discriminator.layers);  // each layer's query weight and bias
}

void check_metrics(const StepMetrics& got, const StepMetrics& want, double tolerance) {
  CHECK(got.gen_loss == Approx(want.gen_loss).epsilon(tolerance));
  CHECK(got.disc_loss == Approx(want.disc_loss).epsilon(tolerance));
  CHECK(got.total_loss == Approx(want.total_loss).epsilon(tolerance));
  CHECK(got.masked == want.masked);
  CHECK(got.tokens == want.tokens);
}

// Three micro-steps of `options` in f32 on both devices from the same weights.
void check_f32_steps(const PretrainOptions& options) {
  Context cpu = Context::cpu(21, Precision::F32);
  Context gpu = Context::cuda(0, 21, Precision::F32);
  const ElectraConfig config = test::tiny_electra_config(0.1f);
  ElectraPretrainer c(cpu, config, options);
  ElectraPretrainer g(gpu, config, options);
  c.init_weights(cpu, 4);
  copy_weights(gpu, g, c);
  const HostBatch batch = test::tiny_batch();
  for (uint32_t micro_step : {0u, 1u, 2u}) {
    INFO("micro-step " << micro_step);
    c.zero_grads(cpu);
    g.zero_grads(gpu);
    poison_tensor(gpu.stream(), g.labels());
    c.step(cpu, batch, micro_step);
    g.step(gpu, batch, micro_step);
    const test::FixedCorruption want = test::download_corruption(cpu, c),
                                got = test::download_corruption(gpu, g);
    CHECK(got.generator_ids == want.generator_ids);
    CHECK(got.positions == want.positions);
    CHECK(got.weights == want.weights);
    CHECK(got.samples == want.samples);
    CHECK(test::download<int32_t>(gpu, g.labels()) == test::download<int32_t>(cpu, c.labels()));
    const StepMetrics got_metrics = g.metrics(gpu), want_metrics = c.metrics(cpu);
    check_metrics(got_metrics, want_metrics, 1e-5);
    CHECK(got_metrics.reward == Approx(want_metrics.reward).epsilon(1e-5));
    CHECK(got_metrics.baseline_loss == Approx(want_metrics.baseline_loss).epsilon(1e-5));
    check_grads(gpu, g, cpu, c, 1e-5);
  }
  CHECK(host_params(gpu, g) == host_params(cpu, c));  // the step never writes the weights
}

}  // namespace

TEST_CASE("the f32 pre-training step on the GPU equals the CPU step", "[pretrainer][gpu]") {
  check_f32_steps(test::tiny_options());
}

// generator_training: adversarial: the reinforce stage and the baseline on both devices.
TEST_CASE("the f32 adversarial step on the GPU equals the CPU step", "[pretrainer][gpu]") {
  PretrainOptions options = test::tiny_options();
  options.generator_training = GeneratorTraining::kAdversarial;
  check_f32_steps(options);
}

TEST_CASE("the bf16 pre-training step on the GPU is within 2e-2 of the f32 CPU step",
          "[pretrainer][gpu]") {
  Context cpu = Context::cpu(21, Precision::F32);
  Context gpu = Context::cuda(0, 21, Precision::BF16);
  const ElectraConfig config = test::tiny_electra_config(0.1f);
  ElectraPretrainer c(cpu, config, test::tiny_options());
  ElectraPretrainer g(gpu, config, test::tiny_options());
  c.init_weights(cpu, 4);
  copy_weights(gpu, g, c);
  const HostBatch batch = test::tiny_batch();
  c.zero_grads(cpu);
  c.step(cpu, batch, 3);
  const test::FixedCorruption fixed = test::download_corruption(cpu, c);
  // The same corruption through the test entry on both sides (same dropout key).
  test::FixedStep on_cpu(cpu, c, batch, fixed), on_gpu(gpu, g, batch, fixed);
  c.zero_grads(cpu);
  on_cpu.run(cpu, 3);
  g.zero_grads(gpu);
  on_gpu.run(gpu, 3);
  check_metrics(g.metrics(gpu), c.metrics(cpu), 2e-2);
  check_grads(gpu, g, cpu, c, 2e-2);
}

// sharing: all (one encoder for both models) and gdes (the discriminator's tables summed on the
// device by elementwise_add; with replace-mlm in bf16 also their bf16 copy, which the
// discriminator's MLM head reads).
TEST_CASE("sharing all and gdes: the GPU step equals the CPU step", "[pretrainer][gpu]") {
  for (const Sharing sharing : {Sharing::kAll, Sharing::kGdes}) {
    for (const Precision precision : {Precision::F32, Precision::BF16}) {
      INFO(sharing_name(sharing) << ", " << precision_name(precision));
      Context cpu = Context::cpu(21, Precision::F32);
      Context gpu = Context::cuda(0, 21, precision);
      const ElectraConfig config =
          sharing == Sharing::kAll ? test::tiny_tied_config(0.1f) : test::tiny_electra_config(0.1f);
      PretrainOptions options = test::tiny_options();
      options.sharing = sharing;
      if (sharing == Sharing::kGdes && precision == Precision::BF16) {
        options.objective = Objective::kReplaceMlm;
      }
      ElectraPretrainer c(cpu, config, options);
      ElectraPretrainer g(gpu, config, options);
      c.init_weights(cpu, 4);
      copy_weights(gpu, g, c);
      const HostBatch batch = test::tiny_batch();
      c.zero_grads(cpu);
      c.step(cpu, batch, 2);
      const test::FixedCorruption fixed = test::download_corruption(cpu, c);
      test::FixedStep on_cpu(cpu, c, batch, fixed);
      test::FixedStep on_gpu(gpu, g, batch, fixed);
      c.zero_grads(cpu);
      on_cpu.run(cpu, 2);
      g.zero_grads(gpu);
      on_gpu.run(gpu, 2);
      const double tolerance = precision == Precision::F32 ? 1e-5 : 2e-2;
      check_metrics(g.metrics(gpu), c.metrics(cpu), tolerance);
      if (sharing == Sharing::kAll && precision == Precision::BF16) {
        check_tied_grads(gpu, cpu, c, config, options, fixed, tolerance);
      } else {
        check_grads(gpu, g, cpu, c, tolerance);
      }
    }
  }
}

// Eight sequences of 16: the tiny batch three times, then all-padding rows but for one token.
HostBatch batch_of_8() {
  HostBatch batch;
  const HostBatch one = test::tiny_batch();
  for (int copy = 0; copy < 3; ++copy) {
    batch.ids.insert(batch.ids.end(), one.ids.begin(), one.ids.end());
    batch.segment_ids.insert(batch.segment_ids.end(), one.segment_ids.begin(),
                             one.segment_ids.end());
  }
  batch.ids.resize(8 * 16, 0);
  batch.segment_ids.resize(8 * 16, 0);
  batch.ids[7 * 16] = 1;  // the all-padding tail gets one real token
  return batch;
}

TEST_CASE("a GPU step allocates nothing", "[pretrainer][gpu]") {
  Context gpu = Context::cuda(0, 1, Precision::BF16);
  PretrainOptions options = test::tiny_options();
  options.batch = 8;
  ElectraPretrainer g(gpu, test::tiny_electra_config(0.1f), options);
  g.init_weights(gpu, 1);
  const HostBatch batch = batch_of_8();
  const size_t planned = g.activation_arena().high_water();
  g.zero_grads(gpu);
  g.step(gpu, batch, 0);
  g.step(gpu, batch, 1);
  gpu.synchronize();
  CHECK(g.activation_arena().high_water() == planned);
  CHECK(std::isfinite(g.metrics(gpu).total_loss));
}

// train.overlap_generator: the generator's backward on a second stream, beside the
// discriminator's, computes the serial backward's bits: the same kernels on the same inputs, with
// every gradient that both models add into summed in the serial order (models/stage_list.h). A
// race between the two streams (a buffer, a workspace or a ticket counter both use) shows here as
// a difference, in f32 and in bf16 alike. Three accumulated micro-steps of 8 sequences.
TEST_CASE("overlap_generator: the GPU step has the serial step's bits", "[pretrainer][gpu]") {
  struct Variant {
    Sharing sharing;
    GeneratorTraining training;
  };
  for (const Variant v : {Variant{Sharing::kEmbeddings, GeneratorTraining::kMle},
                          Variant{Sharing::kNone, GeneratorTraining::kMle},
                          Variant{Sharing::kGdes, GeneratorTraining::kMle},
                          Variant{Sharing::kEmbeddings, GeneratorTraining::kAdversarial}}) {
    for (const Precision precision : {Precision::F32, Precision::BF16}) {
      INFO(sharing_name(v.sharing)
           << (v.training == GeneratorTraining::kAdversarial ? ", adversarial, " : ", ")
           << precision_name(precision));
      Context gpu = Context::cuda(0, 21, precision);
      PretrainOptions options = test::tiny_options();
      options.batch = 8;
      options.sharing = v.sharing;
      options.generator_training = v.training;
      const ElectraConfig config = test::tiny_electra_config(0.1f);
      const HostBatch batch = batch_of_8();
      std::vector<float> grads[2];
      double loss[2] = {0, 0};
      for (const bool overlap : {false, true}) {
        options.overlap_generator = overlap;
        ElectraPretrainer g(gpu, config, options);
        g.init_weights(gpu, 4);
        g.zero_grads(gpu);
        for (uint32_t micro = 0; micro < 3; ++micro) g.step(gpu, batch, micro, 1.0f / 3);
        grads[overlap] = test::download<float>(gpu, g.store().flat_grads());
        loss[overlap] = g.metrics(gpu).total_loss;
      }
      REQUIRE(grads[0].size() == grads[1].size());
      CHECK(std::memcmp(grads[0].data(), grads[1].data(), grads[0].size() * sizeof(float)) == 0);
      CHECK(loss[0] == loss[1]);
      CHECK(std::any_of(grads[0].begin(), grads[0].end(), [](float x) { return x != 0.0f; }));
    }
  }
}
