// ElectraFinetuner on the CPU in f32: HF names, planning (a step allocates nothing),
// reproducible dropout, hand-checked losses and gradients of each head, the layer-wise LR depth of
// every parameter of a 12-layer model, AdamW reducing the loss on a separable task, bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <vector>

#include "models/finetune_model.h"
#include "optim/layerwise_lr.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

FinetuneOptions tiny_options() {
  FinetuneOptions o;
  o.batch = 3;
  o.seq_len = 16;
  return o;
}

FinetuneBatch tiny_finetune_batch() {
  const HostBatch host = test::tiny_batch();  // B = 3, T = 16, padding in two sequences
  FinetuneBatch b;
  b.ids = host.ids;
  b.segment_ids = host.segment_ids;
  return b;
}

TaskHeadConfig head_of(TaskKind kind, int num_labels = 2) {
  TaskHeadConfig h;
  h.kind = kind;
  h.num_labels = num_labels;
  return h;
}

std::vector<float> grads_of(const ElectraFinetuner& model) {
  const Tensor& g = model.store().flat_grads();
  return std::vector<float>(g.ptr<float>(), g.ptr<float>() + g.numel());
}

void fill(const ParameterStore& store, const std::string& name, const std::vector<float>& values) {
  const Tensor t = store.param(name);
  REQUIRE(t.numel() == static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), t.ptr<float>());
}

void fill_zero(const ParameterStore& store, const std::string& name) {
  const Tensor t = store.param(name);
  std::fill(t.ptr<float>(), t.ptr<float>() + t.numel(), 0.0f);
}

// Sum of |gradient| over the encoder's parameters.
double encoder_grad_mass(const ElectraFinetuner& model) {
  double mass = 0;
  for (const ParamInfo& p : model.store().params()) {
    if (p.name.find("/electra.") == std::string::npos) continue;
    const Tensor g = model.store().grad(p.name);
    for (int64_t i = 0; i < g.numel(); ++i) mass += std::abs(g.ptr<float>()[i]);
  }
  return mass;
}

double softplus(double x) {
  return std::log1p(std::exp(x));
}

}  // namespace

TEST_CASE("the fine-tuning model declares the encoder and the head under HF names", "[finetune]") {
  Context ctx = Context::cpu();
  const EncoderConfig encoder = test::tiny_electra_config().discriminator;
  ElectraFinetuner one(ctx, encoder, head_of(TaskKind::kClassification, 3), tiny_options());
  const ParameterStore& s = one.store();
  CHECK(s.contains("discriminator/electra.embeddings.word_embeddings.weight"));
  CHECK(s.contains("discriminator/electra.embeddings_project.weight"));
  CHECK(s.contains("discriminator/electra.encoder.layer.1.output.LayerNorm.bias"));
  CHECK(s.info("discriminator/classifier.out_proj.weight").shape == std::vector<int64_t>{3, 32});
  CHECK(s.info("discriminator/classifier.out_proj.bias").shape == std::vector<int64_t>{3});
  CHECK_FALSE(s.contains("discriminator/classifier.dense.weight"));
  CHECK_FALSE(s.contains("discriminator/discriminator_predictions.dense.weight"));
  for (const ParamInfo& p : s.params()) CHECK(p.name.rfind("discriminator/", 0) == 0);
  // The GPU's attention kernels are the options' (finetune.attention), auto by default.
  CHECK(one.encoder_config().attention == AttentionImpl::kAuto);
  FinetuneOptions unfused = tiny_options();
  unfused.attention = AttentionImpl::kUnfused;
  CHECK(ElectraFinetuner(ctx, encoder, head_of(TaskKind::kClassification, 3), unfused)
            .encoder_config()
            .attention == AttentionImpl::kUnfused);
  // An explicit flash choice the encoder's shape rules out is refused by its key, on any device.
  EncoderConfig one_head = encoder;
  one_head.heads = 1;
  one_head.hidden = one_head.ffn = 256;
  FinetuneOptions flash = tiny_options();
  flash.attention = AttentionImpl::kFlash;
  CHECK_THROWS_WITH(ElectraFinetuner(ctx, one_head, head_of(TaskKind::kClassification), flash),
                    Catch::Contains("finetune.attention flash needs T <= 512 and a head dim <= "
                                    "128 (got T = 16, head dim 256 / 1 = 256)"));

  TaskHeadConfig two = head_of(TaskKind::kRegression);
  two.hf_two_layer = true;
  ElectraFinetuner hf(ctx, encoder, two, tiny_options());
  CHECK(hf.store().info("discriminator/classifier.dense.weight").shape ==
        std::vector<int64_t>{32, 32});
  CHECK(hf.store().info("discriminator/classifier.out_proj.weight").shape ==
        std::vector<int64_t>{1, 32});

  TaskHeadConfig span = head_of(TaskKind::kSpan);
  span.answerability = true;
  ElectraFinetuner qa(ctx, encoder, span, tiny_options());
  CHECK(qa.store().info("discriminator/qa_outputs.weight").shape == std::vector<int64_t>{2, 32});
  CHECK(qa.store().info("discriminator/qa_outputs.bias").shape == std::vector<int64_t>{2});
  CHECK(qa.store().info("discriminator/answerable_classifier.weight").shape ==
        std::vector<int64_t>{1, 32});
}

TEST_CASE("a fine-tuning step allocates nothing and its dropout is keyed by the micro-step",
          "[finetune]") {
  Context ctx = Context::cpu(5);
  TaskHeadConfig head = head_of(TaskKind::kClassification, 3);
  head.hf_two_layer = true;
  ElectraFinetuner model(ctx, test::tiny_electra_config(0.1f).discriminator, head, tiny_options());
  model.init_weights(ctx, 1);
  FinetuneBatch batch = tiny_finetune_batch();
  batch.labels = {2, 0, 1};
  const size_t planned = model.activation_arena().high_water();
  CHECK(planned == model.activation_arena().capacity());

  model.zero_grads(ctx);
  model.step(ctx, batch, 7);
  const double loss = model.metrics(ctx).loss;
  const std::vector<float> first = grads_of(model);
  CHECK(model.activation_arena().high_water() == planned);
  model.zero_grads(ctx);
  model.step(ctx, batch, 7);
  CHECK(grads_of(model) == first);
  CHECK(model.metrics(ctx).loss == loss);
  model.zero_grads(ctx);
  model.step(ctx, batch, 8);
  CHECK(grads_of(model) != first);

  // Gradients accumulate: two half-scaled steps equal one full step.
  model.zero_grads(ctx);
  model.step(ctx, batch, 7, 0.5f);
  model.step(ctx, batch, 7, 0.5f);
  CHECK(test::normwise_error(grads_of(model), first) < 1e-6);

  // Evaluation: no dropout, so two forwards agree; it does not touch the gradients.
  const std::vector<float> before = grads_of(model);
  const FinetuneOutputs a = model.forward(ctx, batch);
  const FinetuneOutputs b = model.forward(ctx, batch);
  CHECK(a.logits.size() == 9);
  CHECK(a.logits == b.logits);
  CHECK(a.has_loss);
  CHECK(a.loss == b.loss);
  CHECK(grads_of(model) == before);
  CHECK(model.activation_arena().high_water() == planned);
}

TEST_CASE("classification: logits, predictions, loss and gradients on a hand case", "[finetune]") {
  // With out_proj.weight = 0 every example's logits are the bias b = (0.5, -1, 2): the loss is
  // lse(b) - mean(b_y), the prediction class 2, and d loss / d b = softmax(b) - mean one-hot(y).
  // No gradient reaches the encoder (d c = W^T dlogits = 0).
  Context ctx = Context::cpu();
  TaskHeadConfig head = head_of(TaskKind::kClassification, 3);
  head.dropout = 0;
  ElectraFinetuner model(ctx, test::tiny_electra_config().discriminator, head, tiny_options());
  model.init_weights(ctx, 2);
  const ParameterStore& s = model.store();
  fill_zero(s, "discriminator/classifier.out_proj.weight");
  fill(s, "discriminator/classifier.out_proj.bias", {0.5f, -1.0f, 2.0f});
  FinetuneBatch batch = tiny_finetune_batch();
  batch.labels = {2, 0, 1};
  const double lse = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0));
  const double expected = lse - (2.0 + 0.5 - 1.0) / 3;

  const FinetuneOutputs out = model.forward(ctx, batch);
  CHECK(out.logits == std::vector<float>{0.5f, -1, 2, 0.5f, -1, 2, 0.5f, -1, 2});
  CHECK(out.predictions == std::vector<int32_t>{2, 2, 2});
  CHECK(out.loss == Approx(expected).epsilon(1e-6));

  model.zero_grads(ctx);
  model.step(ctx, batch, 0);
  const FinetuneMetrics m = model.metrics(ctx);
  CHECK(m.loss == Approx(expected).epsilon(1e-6));
  CHECK(m.accuracy == Approx(1.0 / 3));
  CHECK(m.examples == 3);
  const Tensor db = s.grad("discriminator/classifier.out_proj.bias");
  const double b[3] = {0.5, -1.0, 2.0};
  for (int k = 0; k < 3; ++k) {
    CHECK(db.ptr<float>()[k] == Approx(std::exp(b[k] - lse) - 1.0 / 3).epsilon(1e-5));
  }
  CHECK(encoder_grad_mass(model) == 0.0);

  // Padding rows count in neither the loss nor the accuracy.
  batch.examples = 1;
  batch.labels = {2, 77, -5};  // the padding rows' labels are never read
  model.zero_grads(ctx);
  model.step(ctx, batch, 0);
  CHECK(model.metrics(ctx).loss == Approx(lse - 2.0).epsilon(1e-6));
  CHECK(model.metrics(ctx).accuracy == 1.0);
  CHECK(model.forward(ctx, batch).logits.size() == 3);
}

TEST_CASE("regression: predictions and mean squared error on a hand case", "[finetune]") {
  Context ctx = Context::cpu();
  TaskHeadConfig head = head_of(TaskKind::kRegression);
  head.hf_two_layer = true;  // the zero out_proj makes the dense layer irrelevant
  ElectraFinetuner model(ctx, test::tiny_electra_config().discriminator, head, tiny_options());
  model.init_weights(ctx, 2);
  fill_zero(model.store(), "discriminator/classifier.out_proj.weight");
  fill(model.store(), "discriminator/classifier.out_proj.bias", {0.3f});
  FinetuneBatch batch = tiny_finetune_batch();
  batch.targets = {0.2f, 0.9f, 7.0f};
  batch.examples = 2;
  const FinetuneOutputs out = model.forward(ctx, batch);
  CHECK(out.logits == std::vector<float>{0.3f, 0.3f});
  CHECK(out.predictions.empty());
  // ((0.3 - 0.2)^2 + (0.3 - 0.9)^2) / 2
  CHECK(out.loss == Approx(0.185).epsilon(1e-5));
  model.zero_grads(ctx);
  model.step(ctx, batch, 3);
  CHECK(model.metrics(ctx).loss == Approx(0.185).epsilon(1e-5));
  // mean of 2 (p - y): (0.2 - 1.2) / 2
  CHECK(model.store().grad("discriminator/classifier.out_proj.bias").ptr<float>()[0] ==
        Approx(-0.5).epsilon(1e-5));
}

TEST_CASE("span: uniform logits give log T, plus the weighted answerability BCE", "[finetune]") {
  Context ctx = Context::cpu();
  TaskHeadConfig head = head_of(TaskKind::kSpan);
  head.answerability = true;
  ElectraFinetuner model(ctx, test::tiny_electra_config().discriminator, head, tiny_options());
  model.init_weights(ctx, 2);
  const ParameterStore& s = model.store();
  fill_zero(s, "discriminator/qa_outputs.weight");
  fill(s, "discriminator/qa_outputs.bias", {0.7f, -0.4f});
  fill_zero(s, "discriminator/answerable_classifier.weight");
  fill(s, "discriminator/answerable_classifier.bias", {1.5f});
  FinetuneBatch batch = tiny_finetune_batch();
  batch.start_positions = {3, 9, -1};  // -1: ignored
  batch.end_positions = {5, 9, 6};
  batch.is_impossible = {0, 0, 1};
  const FinetuneOutputs out = model.forward(ctx, batch);
  REQUIRE(out.start_logits.size() == 48);
  REQUIRE(out.end_logits.size() == 48);
  for (float x : out.start_logits) CHECK(x == 0.7f);
  for (float x : out.end_logits) CHECK(x == -0.4f);
  CHECK(out.answerable_logits == std::vector<float>{1.5f, 1.5f, 1.5f});
  const double bce = (2 * softplus(1.5) + softplus(-1.5)) / 3;
  CHECK(out.loss == Approx(std::log(16.0) + 0.5 * bce).epsilon(1e-6));

  model.zero_grads(ctx);
  model.step(ctx, batch, 0);
  const FinetuneMetrics m = model.metrics(ctx);
  CHECK(m.start_loss == Approx(std::log(16.0)).epsilon(1e-6));
  CHECK(m.end_loss == Approx(std::log(16.0)).epsilon(1e-6));
  CHECK(m.answerable_loss == Approx(bce).epsilon(1e-6));
  // d / d b_a of 0.5 * mean BCE = 0.5 * mean(sigmoid(1.5) - y).
  const double sig = 1.0 / (1.0 + std::exp(-1.5));
  CHECK(s.grad("discriminator/answerable_classifier.bias").ptr<float>()[0] ==
        Approx(0.5 * (sig - 1.0 / 3)).epsilon(1e-5));
  CHECK(encoder_grad_mass(model) == 0.0);

  // Without answerability the loss is the span loss alone.
  ElectraFinetuner plain(ctx, test::tiny_electra_config().discriminator, head_of(TaskKind::kSpan),
                         tiny_options());
  plain.init_weights(ctx, 2);
  fill_zero(plain.store(), "discriminator/qa_outputs.weight");
  CHECK(plain.forward(ctx, batch).loss == Approx(std::log(16.0)).epsilon(1e-6));
  CHECK_FALSE(plain.store().contains("discriminator/answerable_classifier.weight"));
}

TEST_CASE("every parameter of a 12-layer fine-tuning model gets its layer-wise LR depth",
          "[finetune][layerwise_lr]") {
  Context ctx = Context::cpu();
  EncoderConfig e;
  e.vocab_size = 30;
  e.embedding_size = 4;  // with embeddings_project
  e.hidden = 8;
  e.layers = 12;
  e.heads = 2;
  e.ffn = 16;
  e.max_positions = 8;
  FinetuneOptions o;
  o.batch = 1;
  o.seq_len = 4;
  ElectraFinetuner model(ctx, e, head_of(TaskKind::kClassification, 3), o);
  for (bool official : {false, true}) {
    const LayerwiseLrDecay decay{0.8, 12, official};
    std::map<int, int> per_depth;
    for (const ParamInfo& p : model.store().params()) {
      const int depth = layerwise_lr_depth(p.name, decay);
      ++per_depth[depth];
      INFO(p.name);
      if (p.name.find("classifier.") != std::string::npos) CHECK(depth == 0);
      if (p.name.find("embeddings") != std::string::npos) CHECK(depth == 13 + official);
      if (p.name.find("layer.11.") != std::string::npos) CHECK(depth == 1 + official);
      if (p.name.find("layer.0.") != std::string::npos) CHECK(depth == 12 + official);
    }
    CHECK(per_depth[0] == 2);              // out_proj weight and bias
    CHECK(per_depth[13 + official] == 7);  // 3 tables, LayerNorm, projection
    for (int d = 1; d <= 12; ++d) CHECK(per_depth[d + official] == 16);
    CHECK(per_depth.size() == 14);
  }
}

TEST_CASE("AdamW steps on a separable classification batch reduce the loss", "[finetune]") {
  // Label 1 when the first word is in the upper half of the vocabulary. Eight sequences of
  // length 8 with padding; the whole model trains with the layer-wise LR decay.
  Context ctx = Context::cpu(9);
  FinetuneOptions o;
  o.batch = 8;
  o.seq_len = 8;
  TaskHeadConfig head = head_of(TaskKind::kClassification, 2);
  ElectraFinetuner model(ctx, test::tiny_electra_config(0.1f).discriminator, head, o);
  model.init_weights(ctx, 4);
  FinetuneBatch batch;
  batch.ids.assign(64, 0);
  batch.segment_ids.assign(64, 0);
  const std::vector<int32_t> words = test::random_ints(64, 3, 4, 96);
  const int32_t first[8] = {10, 80, 25, 60, 90, 5, 70, 40};
  for (int b = 0; b < 8; ++b) {
    const int length = 4 + b % 5;
    for (int i = 0; i < length; ++i) batch.ids[b * 8 + i] = words[b * 8 + i];
    batch.ids[b * 8] = 1;
    batch.ids[b * 8 + 1] = first[b];
    batch.ids[b * 8 + length - 1] = 2;
    batch.labels.push_back(first[b] > 50 ? 1 : 0);
  }
  OptimizerConfig c;
  c.weight_decay = 0;
  c.schedule = LrSchedule{ScheduleKind::kConstant, 2e-3, 0, 100};
  Arena state("state", Device::CPU, Optimizer::state_bytes(model.store(), c.kind));
  Optimizer opt(ctx, model.store(), c, state,
                layerwise_lr_multiplier(LayerwiseLrDecay{0.8, 2, false}));
  const FinetuneOutputs start = model.forward(ctx, batch);
  for (int t = 0; t < 40; ++t) {
    model.zero_grads(ctx);
    model.step(ctx, batch, static_cast<uint32_t>(t));
    opt.step(ctx, t);
  }
  const FinetuneOutputs end = model.forward(ctx, batch);
  INFO("loss " << start.loss << " -> " << end.loss);
  CHECK(end.loss < 0.25 * start.loss);
  for (int b = 0; b < 8; ++b) CHECK(end.predictions[b] == batch.labels[b]);
}

TEST_CASE("bad fine-tuning batches and heads are refused", "[finetune]") {
  Context ctx = Context::cpu();
  const EncoderConfig encoder = test::tiny_electra_config().discriminator;
  ElectraFinetuner model(ctx, encoder, head_of(TaskKind::kClassification, 3), tiny_options());
  model.init_weights(ctx, 1);
  FinetuneBatch batch = tiny_finetune_batch();
  CHECK_THROWS_WITH(model.step(ctx, batch, 0), Catch::Contains("targets"));
  CHECK_FALSE(model.forward(ctx, batch).has_loss);
  batch.labels = {0, 3, 1};
  CHECK_THROWS_WITH(model.step(ctx, batch, 0),
                    Catch::Contains("label 3 of example 1") && Catch::Contains("[0, 3)"));
  batch.labels = {0, 1};
  CHECK_THROWS_AS(model.step(ctx, batch, 0), UserError);
  batch.labels = {0, 1, 2};
  batch.examples = 4;
  CHECK_THROWS_WITH(model.step(ctx, batch, 0), Catch::Contains("4 examples"));
  batch.examples = -1;
  batch.ids[20] = 97;
  CHECK_THROWS_WITH(model.step(ctx, batch, 0),
                    Catch::Contains("token id 97") && Catch::Contains("sequence 1, position 4"));

  ElectraFinetuner span(ctx, encoder, head_of(TaskKind::kSpan), tiny_options());
  FinetuneBatch qa = tiny_finetune_batch();
  qa.start_positions = {1, 2, 3};
  CHECK_THROWS_WITH(span.step(ctx, qa, 0), Catch::Contains("both start and end"));

  CHECK_THROWS_WITH(
      ElectraFinetuner(ctx, encoder, head_of(TaskKind::kClassification, 1), tiny_options()),
      Catch::Contains("num_labels"));
  TaskHeadConfig bad = head_of(TaskKind::kSpan);
  bad.hf_two_layer = true;
  CHECK_THROWS_AS(ElectraFinetuner(ctx, encoder, bad, tiny_options()), UserError);
  FinetuneOptions too_long = tiny_options();
  too_long.seq_len = 33;
  CHECK_THROWS_WITH(
      ElectraFinetuner(ctx, encoder, head_of(TaskKind::kRegression), too_long),
      Catch::Contains("finetune.max_seq_len 33") && Catch::Contains("max_position_embeddings"));
  CHECK(parse_task_kind("span") == TaskKind::kSpan);
  CHECK_THROWS_WITH(parse_task_kind("ner"), Catch::Contains("unknown task kind 'ner'"));
}
