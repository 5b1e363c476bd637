// The generator's vocabulary padded to a multiple of 128. The tiny model's V = 97 runs
// the logits GEMM over 128 columns: the word table and the output bias reserve 31 zero rows after
// their HF shapes. The padding is never sampled nor the argmax (even when poisoned), stays exactly
// zero through AdamW and LAMB updates and is never saved. With the padding on (vocab_multiple 128)
// and off (vocab_multiple 1) the first step gives the same losses and samples bit for bit; the
// gradients and the updated parameters agree to f32 rounding, not bit for bit (the softmax's exp no
// longer depends on a row's address; which op of the backward still rounds differently with the
// padded layout was not tracked down), bounded here at 1e-5 normwise.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/safetensors.h"
#include "test/models/tiny_pretrainer.h"
#include "train/trainer_checkpoint.h"

using namespace electra;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kVocab = 97, kPadded = 128;
const std::string kWord = "discriminator/electra.embeddings.word_embeddings.weight";
const std::string kBias = "generator/generator_lm_head.bias";

PretrainOptions options(int64_t vocab_multiple) {
  PretrainOptions o = test::tiny_options();
  o.vocab_multiple = vocab_multiple;
  return o;
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.ptr<float>(), t.ptr<float>() + t.numel());
}

// The padding rows of the word table and the output bias: parameters, or gradients.
std::vector<float> padding(const ParameterStore& store, bool grads) {
  std::vector<float> out;
  for (const std::string& name : {kWord, kBias}) {
    const Tensor full = grads ? store.padded_grad(name) : store.padded_param(name);
    const float* p = full.ptr<float>();
    out.insert(out.end(), p + store.info(name).numel, p + full.numel());
  }
  return out;
}

bool all_zero(const std::vector<float>& v) {
  for (float x : v) {
    if (x != 0.0f) return false;
  }
  return true;
}

// A model with its optimizer, initialised from seed 1.
struct Trainer {
  Trainer(Context& ctx, int64_t vocab_multiple, OptimizerKind kind = OptimizerKind::kAdamW,
          float dropout = 0.1f)
      : model(ctx, test::tiny_electra_config(dropout), options(vocab_multiple)),
        state("optimizer", Device::CPU, Optimizer::state_bytes(model.store(), kind)),
        optimizer(ctx, model.store(), config(kind), state) {
    model.init_weights(ctx, 1);
  }

  static OptimizerConfig config(OptimizerKind kind) {
    OptimizerConfig c;
    c.kind = kind;
    c.schedule.peak = 1e-3;
    c.schedule.warmup_steps = 0;
    c.schedule.total_steps = 100;
    return c;
  }

  // One update from one micro-batch keyed by `step`.
  StepMetrics update(Context& ctx, const HostBatch& batch, int64_t step) {
    model.zero_grads(ctx);
    model.step(ctx, batch, static_cast<uint32_t>(step));
    const StepMetrics m = model.metrics(ctx);
    optimizer.step(ctx, step);
    return m;
  }

  ElectraPretrainer model;
  Arena state;
  Optimizer optimizer;
};

// Every parameter's values (or gradients), by name: the layouts with and without padding differ.
std::vector<std::vector<float>> by_name(const ParameterStore& store, bool grads) {
  std::vector<std::vector<float>> out;
  for (const ParamInfo& p : store.params()) {
    out.push_back(values(grads ? store.grad(p.name) : store.param(p.name)));
  }
  return out;
}

// Per parameter, by name: max |a - b| / max |b| (the key biases' gradients are zero in theory
// and only rounding noise in practice, and so are their updates: skipped).
void check_close(const ParameterStore& a, const ParameterStore& b, bool grads, double tolerance) {
  const std::vector<std::vector<float>> va = by_name(a, grads), vb = by_name(b, grads);
  for (size_t i = 0; i < va.size(); ++i) {
    const std::string& name = a.params()[i].name;
    INFO(name);
    if (name.find("key.bias") != std::string::npos) continue;
    CHECK(test::normwise_error(va[i], vb[i]) < tolerance);
  }
}

void check_same_metrics(const StepMetrics& a, const StepMetrics& b) {
  CHECK(a.gen_loss == b.gen_loss);
  CHECK(a.gen_accuracy == b.gen_accuracy);
  CHECK(a.disc_loss == b.disc_loss);
  CHECK(a.disc_accuracy == b.disc_accuracy);
  CHECK(a.replaced_fraction == b.replaced_fraction);
  CHECK(a.total_loss == b.total_loss);
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("the word table and the output bias reserve padding rows up to a multiple of 128",
          "[vocab_padding]") {
  Context ctx = Context::cpu();
  ElectraPretrainer padded(ctx, test::tiny_electra_config(), options(128));
  ElectraPretrainer plain(ctx, test::tiny_electra_config(), options(1));
  for (const std::string& name : {kWord, kBias}) {
    INFO(name);
    CHECK(padded.store().info(name).shape[0] == kVocab);  // the HF shape
    CHECK(padded.store().info(name).padded_rows == kPadded);
    CHECK(plain.store().info(name).padded_rows == kVocab);
  }
  CHECK(padded.store().param(kWord).str() == "f32[97,16]@cpu");
  CHECK(padded.store().padded_param(kWord).str() == "f32[128,16]@cpu");
  CHECK(padded.store().padded_param(kBias).str() == "f32[128]@cpu");
  CHECK(padded.store().parameter_count() == plain.store().parameter_count());
  CHECK(padded.store().unpadded_total() == plain.store().total_elements());
  // Zero from construction, before any initialisation or load.
  CHECK(all_zero(padding(padded.store(), false)));
  CHECK(all_zero(padding(padded.store(), true)));
}

TEST_CASE("a step gives the same losses and samples with and without padding", "[vocab_padding]") {
  Context ctx = Context::cpu(5);
  Trainer padded(ctx, 128), plain(ctx, 1);
  const HostBatch batch = test::tiny_batch();
  for (int64_t step = 0; step < 3; ++step) {
    INFO("update " << step);
    const StepMetrics a = padded.update(ctx, batch, step);
    const StepMetrics b = plain.update(ctx, batch, step);
    // Bit for bit in the first update, when both start from the same weights.
    if (step == 0) check_same_metrics(a, b);
    CHECK(a.total_loss == Approx(b.total_loss).epsilon(1e-6));
    CHECK(test::download_corruption(ctx, padded.model).samples ==
          test::download_corruption(ctx, plain.model).samples);
    check_close(padded.model.store(), plain.model.store(), true, 1e-5);
    check_close(padded.model.store(), plain.model.store(), false, 1e-5);
  }
  // The test entry (fixed masking and samples) too.
  const test::FixedCorruption fixed = test::tiny_corruption(batch);
  test::FixedStep padded_step(ctx, padded.model, batch, fixed);
  test::FixedStep plain_step(ctx, plain.model, batch, fixed);
  padded.model.zero_grads(ctx);
  plain.model.zero_grads(ctx);
  padded_step.run(ctx, 9);
  plain_step.run(ctx, 9);
  CHECK(padded.model.metrics(ctx).total_loss ==
        Approx(plain.model.metrics(ctx).total_loss).epsilon(1e-6));
  check_close(padded.model.store(), plain.model.store(), true, 1e-5);
}

TEST_CASE("the padding stays exactly zero through AdamW and LAMB updates; samples stay below V",
          "[vocab_padding]") {
  for (const OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    INFO(optimizer_kind_name(kind));
    Context ctx = Context::cpu(7);
    Trainer t(ctx, 128, kind);
    const HostBatch batch = test::tiny_batch();
    const std::vector<float> word_before = values(t.model.store().param(kWord));
    for (int64_t step = 0; step < 4; ++step) {
      const StepMetrics m = t.update(ctx, batch, step);
      REQUIRE(std::isfinite(m.total_loss));
      for (const int32_t sample : test::download_corruption(ctx, t.model).samples) {
        CHECK(sample >= 0);
        CHECK(sample < kVocab);
      }
      // The padding's gradient is exactly zero (dlogits of padded columns are 0) and the
      // optimizer never touches the padding (it is in no segment, so LAMB's trust ratio of the
      // word table is that of its V real rows).
      CHECK(all_zero(padding(t.model.store(), true)));
      CHECK(all_zero(padding(t.model.store(), false)));
    }
    CHECK(values(t.model.store().param(kWord)) != word_before);  // the real rows did train
  }
}

TEST_CASE("poisoned padding columns are never sampled, never the argmax and never reach the loss",
          "[vocab_padding]") {
  Context ctx = Context::cpu(3);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), options(128));
  model.init_weights(ctx, 2);
  const HostBatch batch = test::tiny_batch();
  model.zero_grads(ctx);
  model.step(ctx, batch, 4);
  const StepMetrics clean = model.metrics(ctx);
  const std::vector<int32_t> clean_samples = test::download_corruption(ctx, model).samples;
  const std::vector<std::vector<float>> clean_grads = by_name(model.store(), true);

  // Padded bias rows of 1e30 make every padded logit the row's largest by far.
  const Tensor bias = model.store().padded_param(kBias);
  for (int64_t j = kVocab; j < kPadded; ++j) bias.ptr<float>()[j] = 1e30f;
  model.zero_grads(ctx);
  model.step(ctx, batch, 4);
  check_same_metrics(model.metrics(ctx), clean);
  CHECK(test::download_corruption(ctx, model).samples == clean_samples);
  CHECK(by_name(model.store(), true) == clean_grads);
  CHECK(all_zero(padding(model.store(), true)));
}

TEST_CASE("checkpoints keep the HF shapes and are the same files with or without padding",
          "[vocab_padding]") {
  const fs::path root = fs::path(ELECTRA_VOCAB_PADDING_TEST_TMP_DIR);
  fs::remove_all(root);
  Context ctx = Context::cpu(11);
  Trainer padded(ctx, 128);
  const HostBatch batch = test::tiny_batch();
  for (int64_t step = 0; step < 2; ++step) padded.update(ctx, batch, step);
  TrainerState state;
  state.step = 2;
  const std::string a =
      save_checkpoint(ctx, padded.model, padded.optimizer, state, (root / "a").string(), 0);
  const SafetensorsFile generator = SafetensorsFile::read(a + "/generator/model.safetensors");
  REQUIRE(generator.find("electra.embeddings.word_embeddings.weight") != nullptr);
  CHECK(generator.find("electra.embeddings.word_embeddings.weight")->shape ==
        std::vector<int64_t>{kVocab, 16});
  REQUIRE(generator.find("generator_lm_head.bias") != nullptr);
  CHECK(generator.find("generator_lm_head.bias")->shape == std::vector<int64_t>{kVocab});
  const SafetensorsFile moments = SafetensorsFile::read(a + "/trainer_state.safetensors");
  REQUIRE(moments.find("optimizer.m") != nullptr);
  CHECK(moments.find("optimizer.m")->numel() == padded.model.store().unpadded_total());

  // An unpadded model resumes it (same weights and moments, parameter by parameter) and saves the
  // same files.
  Trainer plain(ctx, 1);
  load_checkpoint(ctx, plain.model, plain.optimizer, a);
  CHECK(by_name(plain.model.store(), false) == by_name(padded.model.store(), false));
  for (const ParamInfo& p : plain.model.store().params()) {
    const ParamInfo& q = padded.model.store().info(p.name);
    const float* pm = plain.optimizer.m().ptr<float>() + p.offset;
    const float* qm = padded.optimizer.m().ptr<float>() + q.offset;
    CHECK(std::vector<float>(pm, pm + p.numel) == std::vector<float>(qm, qm + q.numel));
  }
  const std::string b =
      save_checkpoint(ctx, plain.model, plain.optimizer, state, (root / "b").string(), 0);
  for (const char* file : {"discriminator/model.safetensors", "generator/model.safetensors",
                           "trainer_state.safetensors"}) {
    INFO(file);
    CHECK(read_bytes(fs::path(a) / file) == read_bytes(fs::path(b) / file));
  }

  // A padded model resumes the unpadded model's checkpoint: zero padding, and the next update
  // equals the original run's bit for bit.
  Trainer resumed(ctx, 128);
  load_checkpoint(ctx, resumed.model, resumed.optimizer, b);
  CHECK(by_name(resumed.model.store(), false) == by_name(padded.model.store(), false));
  CHECK(values(resumed.optimizer.m()) == values(padded.optimizer.m()));
  CHECK(values(resumed.optimizer.v()) == values(padded.optimizer.v()));
  CHECK(all_zero(padding(resumed.model.store(), false)));
  check_same_metrics(resumed.update(ctx, batch, 2), padded.update(ctx, batch, 2));
  CHECK(by_name(resumed.model.store(), false) == by_name(padded.model.store(), false));
  fs::remove_all(root);
}
