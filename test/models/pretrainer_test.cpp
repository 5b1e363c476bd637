// ElectraPretrainer on the CPU in f32: planning, allocation-free steps, reproducibility, metrics.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

std::vector<float> grads_of(const ElectraPretrainer& model) {
  const Tensor& g = model.store().flat_grads();
  return std::vector<float>(g.ptr<float>(), g.ptr<float>() + g.numel());
}

}  // namespace

TEST_CASE(
    "the pretrainer declares HF-named parameters once, shared tables under the "
    "discriminator",
    "[pretrainer]") {
  Context ctx = Context::cpu();
  ElectraPretrainer model(ctx, test::tiny_electra_config(), test::tiny_options());
  const ParameterStore& store = model.store();
  CHECK(store.contains("discriminator/electra.embeddings.word_embeddings.weight"));
  CHECK(store.contains("discriminator/electra.embeddings_project.weight"));
  CHECK(store.contains("discriminator/discriminator_predictions.dense_prediction.weight"));
  CHECK(store.contains("generator/generator_lm_head.bias"));
  CHECK(store.contains("generator/generator_predictions.LayerNorm.weight"));
  CHECK(store.contains("generator/electra.encoder.layer.1.output.dense.weight"));
  CHECK_FALSE(store.contains("generator/electra.embeddings.word_embeddings.weight"));
  CHECK_FALSE(store.contains("generator/electra.embeddings_project.weight"));  // 16 == E
  CHECK(store.info("generator/electra.encoder.layer.0.attention.self.query.weight").shape ==
        std::vector<int64_t>{16, 16});
  // Q, K and V of a layer are contiguous (one packed projection).
  const ParamInfo& q =
      store.info("discriminator/electra.encoder.layer.0.attention.self.query.weight");
  const ParamInfo& k =
      store.info("discriminator/electra.encoder.layer.0.attention.self.key.weight");
  const ParamInfo& v =
      store.info("discriminator/electra.encoder.layer.0.attention.self.value.weight");
  CHECK(k.offset == q.offset + q.numel);
  CHECK(v.offset == k.offset + k.numel);
  CHECK(model.slots() == 4);
}

TEST_CASE("a training step allocates nothing and is reproducible for the same micro-step",
          "[pretrainer]") {
  Context ctx = Context::cpu(5);
  ElectraPretrainer model(ctx, test::tiny_electra_config(0.1f), test::tiny_options());
  model.init_weights(ctx, 1);
  const HostBatch batch = test::tiny_batch();
  const size_t planned = model.activation_arena().high_water();
  CHECK(planned == model.activation_arena().capacity());

  model.zero_grads(ctx);
  model.step(ctx, batch, 7);
  const StepMetrics first = model.metrics(ctx);
  const std::vector<float> first_grads = grads_of(model);
  CHECK(model.activation_arena().high_water() == planned);

  model.zero_grads(ctx);
  model.step(ctx, batch, 7);
  CHECK(grads_of(model) == first_grads);
  CHECK(model.metrics(ctx).total_loss == first.total_loss);

  // Another micro-step draws other masks, samples and dropout.
  model.zero_grads(ctx);
  model.step(ctx, batch, 8);
  CHECK(grads_of(model) != first_grads);

  // Gradients accumulate: two half-scaled steps equal one full step.
  model.zero_grads(ctx);
  model.step(ctx, batch, 7, 0.5f);
  model.step(ctx, batch, 7, 0.5f);
  const std::vector<float> accumulated = grads_of(model);
  CHECK(test::normwise_error(accumulated, first_grads) < 1e-6);
}

TEST_CASE("step metrics are consistent with the masking and the losses", "[pretrainer]") {
  Context ctx = Context::cpu(5);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), test::tiny_options());
  model.init_weights(ctx, 1);
  const HostBatch batch = test::tiny_batch();
  model.zero_grads(ctx);
  model.step(ctx, batch, 0);
  const StepMetrics m = model.metrics(ctx);
  CHECK(m.tokens == 16 + 11 + 7);
  // k = max(1, round(0.25 * non_pad)) capped by N = 4: 4, 3 (2.75), 2 (1.75).
  CHECK(m.masked == 4 + 3 + 2);
  // At initialisation the generator is near uniform over 97 tokens.
  CHECK(m.gen_loss == Approx(std::log(97.0)).epsilon(0.05));
  CHECK(m.disc_loss == Approx(std::log(2.0)).epsilon(0.05));
  CHECK(m.total_loss == Approx(m.gen_loss + 50 * m.disc_loss));
  CHECK(m.replaced_fraction > 0);
  CHECK(m.replaced_fraction <= m.masked / m.tokens);
  CHECK(m.disc_accuracy >= 0);
  CHECK(m.disc_accuracy <= 1);
  const test::FixedCorruption c = test::download_corruption(ctx, model);
  // The discriminator labels are exactly the slots whose sample differs from the original.
  const std::vector<int32_t> labels(model.labels().ptr<int32_t>(),
                                    model.labels().ptr<int32_t>() + model.labels().numel());
  int replaced = 0;
  for (size_t i = 0; i < c.positions.size(); ++i) {
    if (c.weights[i] == 0) continue;
    const size_t at = (i / 4) * 16 + static_cast<size_t>(c.positions[i]);
    const bool differs = c.samples[i] != batch.ids[at];
    CHECK(labels[at] == differs);
    replaced += differs;
  }
  int labelled = 0;
  for (int32_t l : labels) labelled += l;
  CHECK(labelled == replaced);
  CHECK(m.replaced_fraction == Approx(replaced / m.tokens));
}

TEST_CASE("bad batches are refused naming the position", "[pretrainer]") {
  Context ctx = Context::cpu();
  ElectraPretrainer model(ctx, test::tiny_electra_config(), test::tiny_options());
  model.init_weights(ctx, 1);
  HostBatch batch = test::tiny_batch();
  batch.ids[17] = 97;
  CHECK_THROWS_WITH(model.step(ctx, batch, 0),
                    Catch::Contains("token id 97") && Catch::Contains("sequence 1, position 1"));
  batch = test::tiny_batch();
  batch.ids.pop_back();
  CHECK_THROWS_AS(model.step(ctx, batch, 0), UserError);
  ElectraConfig too_short = test::tiny_electra_config();
  too_short.discriminator.max_positions = 8;
  CHECK_THROWS_WITH(ElectraPretrainer(ctx, too_short, test::tiny_options()),
                    Catch::Contains("max_positions"));
}

TEST_CASE("init_weights follows the official initialisation", "[pretrainer]") {
  Context ctx = Context::cpu();
  ElectraPretrainer model(ctx, test::tiny_electra_config(), test::tiny_options());
  model.init_weights(ctx, 42);
  const ParameterStore& store = model.store();
  const Tensor w = store.param("discriminator/electra.embeddings.word_embeddings.weight");
  double sum = 0, sq = 0, worst = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double x = w.ptr<float>()[i];
    sum += x;
    sq += x * x;
    worst = std::max(worst, std::abs(x));
  }
  const double n = static_cast<double>(w.numel());
  CHECK(std::abs(sum / n) < 0.003);
  // The std of N(0, 0.02) truncated at 2 std is 0.02 * 0.8796.
  CHECK(std::sqrt(sq / n) == Approx(0.02 * 0.8796).epsilon(0.08));
  CHECK(worst <= 0.04);
  CHECK(store.param("generator/generator_predictions.LayerNorm.weight").ptr<float>()[3] == 1.0f);
  CHECK(store.param("generator/generator_lm_head.bias").ptr<float>()[5] == 0.0f);
}

TEST_CASE("a backward without its loss is refused, not run on the logits", "[pretrainer]") {
  Context ctx = Context::cpu();
  ElectraPretrainer model(ctx, test::tiny_electra_config(), test::tiny_options());
  model.init_weights(ctx, 1);
  const HostBatch batch = test::tiny_batch();
  test::FixedStep fixed(ctx, model, batch, test::tiny_corruption(batch));
  fixed.feed(ctx);
  model.set_step(ctx, 0, 1.0f);
  const Corruption& c = fixed.corruption();
  const DropoutPass pass{model.rng(ctx, RngPurpose::kDropout), true};
  model.zero_grads(ctx);
  // Both forwards, no loss: the logits buffers hold logits, and no gradient was handed on.
  ForwardContext saved;
  saved.pass = pass;
  saved.samples = c.samples;
  model.generator_forward(ctx, c, pass);
  model.discriminator_forward(ctx, c, c.samples, pass);
  CHECK_THROWS_WITH(model.backward(ctx, saved), Catch::Contains("the loss did not run"));
  // The generator's loss alone: the discriminator's gradient is still missing.
  model.generator_loss(ctx, c, saved);
  model.discriminator_forward(ctx, c, saved.samples, pass);
  CHECK_THROWS_WITH(model.backward(ctx, saved),
                    Catch::Contains("discriminator binary head: backward without a gradient"));
  // Refused before any gradient was written.
  CHECK(grads_of(model) == std::vector<float>(grads_of(model).size(), 0.0f));
  // With both losses it runs.
  model.discriminator_loss(ctx, c, saved);
  model.backward(ctx, saved);
  CHECK(grads_of(model) != std::vector<float>(grads_of(model).size(), 0.0f));
}
