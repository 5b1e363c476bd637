// The whole fine-tuning step in float64 on the CPU: every parameter's gradient (up to
// 64 coordinates per tensor), encoder included, against central differences of the task loss,
// for each head: classification (official one-layer head), HF's two-layer head with dropout on
// (the backward must regenerate the forward's masks), regression with padding rows, span
// prediction with an ignored position, and span with the SQuAD 2.0 answerable classifier.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "models/finetune_model.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

FinetuneBatch tiny_finetune_batch() {
  const HostBatch host = test::tiny_batch();  // B = 3, T = 16, padding in two sequences
  FinetuneBatch b;
  b.ids = host.ids;
  b.segment_ids = host.segment_ids;
  return b;
}

// Gradients whose true value is exactly zero, by invariance of a softmax to a shift of all its
// inputs: the attention key bias (q . b_k is the same for every key of a row), the span head's
// bias (the same for every position of a sequence) and, without the answerable classifier, the
// last LayerNorm's beta (it moves every token's start and end logit by the same w . beta).
bool zero_by_invariance(const std::string& name, const TaskHeadConfig& head, int layers) {
  if (name.find("key.bias") != std::string::npos) return true;
  if (head.kind != TaskKind::kSpan) return false;
  if (name.find("qa_outputs.bias") != std::string::npos) return true;
  return !head.answerability &&
         name.find(str_cat("layer.", layers - 1, ".output.LayerNorm.bias")) != std::string::npos;
}

void check_gradients(const TaskHeadConfig& head, float dropout, const FinetuneBatch& batch) {
  Context ctx = Context::cpu(23, Precision::F64);
  const EncoderConfig encoder = test::tiny_electra_config(dropout).discriminator;
  FinetuneOptions options;
  options.batch = 3;
  options.seq_len = 16;
  ElectraFinetuner model(ctx, encoder, head, options);
  model.init_weights(ctx, 3);
  // Larger random parameters than the init, so that no gradient vanishes by symmetry (zero
  // biases, unit gammas) and the head's logits are not all near zero.
  const ParameterStore& store = model.store();
  double* flat = store.flat_params().ptr<double>();
  const std::vector<double> noise =
      test::random_vector<double>(static_cast<size_t>(store.total_elements()), 11, -0.2, 0.2);
  for (const ParamInfo& p : store.params()) {
    const double amplitude =
        p.kind == ParamKind::kWeight || p.kind == ParamKind::kEmbedding ? 2.0 : 1.0;
    for (int64_t j = 0; j < p.numel; ++j) flat[p.offset + j] += amplitude * noise[p.offset + j];
  }

  model.zero_grads(ctx);
  model.step(ctx, batch, 4);
  const double base = model.metrics(ctx).loss;
  REQUIRE(std::isfinite(base));
  REQUIRE(base > 0);
  const std::vector<double> analytic(store.flat_grads().ptr<double>(),
                                     store.flat_grads().ptr<double>() + store.total_elements());
  // The loss of the same micro-step (the same dropout masks).
  auto loss = [&]() {
    model.step(ctx, batch, 4);
    return model.metrics(ctx).loss;
  };
  const double h = 1e-5;
  for (const ParamInfo& p : store.params()) {
    const int64_t stride = std::max<int64_t>(1, p.numel / 64);
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < p.numel; j += stride) {
      double& x = flat[p.offset + j];
      const double saved = x;
      x = saved + h;
      const double up = loss();
      x = saved - h;
      const double down = loss();
      x = saved;
      const double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(analytic[p.offset + j] - numeric));
      scale = std::max(scale, std::abs(numeric));
    }
    INFO(p.name << ": max |analytic - numeric| " << worst << ", max |numeric| " << scale);
    if (zero_by_invariance(p.name, head, encoder.layers)) {
      CHECK(worst <= 1e-8);
      CHECK(scale <= 1e-8);
    } else {
      CHECK(scale > 0);
      CHECK(worst <= 1e-6 * scale);
    }
  }
}

}  // namespace

TEST_CASE("classification head gradients equal central differences in float64",
          "[finetune][gradcheck]") {
  FinetuneBatch batch = tiny_finetune_batch();
  batch.labels = {2, 0, 1};
  TaskHeadConfig head;
  head.num_labels = 3;
  head.dropout = 0;
  check_gradients(head, 0.0f, batch);
}

TEST_CASE("HF two-layer classification head gradients with dropout equal central differences",
          "[finetune][gradcheck]") {
  FinetuneBatch batch = tiny_finetune_batch();
  batch.labels = {2, 0, 1};
  TaskHeadConfig head;
  head.num_labels = 3;
  head.hf_two_layer = true;
  head.dropout = 0.1f;
  check_gradients(head, 0.1f, batch);
}

TEST_CASE("regression head gradients with a padding row equal central differences",
          "[finetune][gradcheck]") {
  FinetuneBatch batch = tiny_finetune_batch();
  batch.targets = {0.2f, 0.9f, 123.0f};  // row 2 is padding: its target is never read
  batch.examples = 2;
  TaskHeadConfig head;
  head.kind = TaskKind::kRegression;
  head.dropout = 0;
  check_gradients(head, 0.0f, batch);
}

TEST_CASE("span head gradients with an ignored position equal central differences",
          "[finetune][gradcheck]") {
  FinetuneBatch batch = tiny_finetune_batch();
  batch.start_positions = {3, 9, 16};  // 16 = T: ignored
  batch.end_positions = {5, 9, 6};
  TaskHeadConfig head;
  head.kind = TaskKind::kSpan;
  check_gradients(head, 0.0f, batch);
}

TEST_CASE("span head with answerability: gradients equal central differences",
          "[finetune][gradcheck]") {
  FinetuneBatch batch = tiny_finetune_batch();
  batch.start_positions = {3, 9, 16};
  batch.end_positions = {5, 9, 6};
  batch.is_impossible = {0, 0, 1};
  TaskHeadConfig head;
  head.kind = TaskKind::kSpan;
  head.answerability = true;
  check_gradients(head, 0.0f, batch);
}
