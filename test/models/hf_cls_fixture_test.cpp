// Fixture: the logits of an HF ElectraForSequenceClassification checkpoint (two-layer
// head), loaded through the fine-tuning loader, match HF transformers on the CPU (1e-5).
// Regenerate with test/fixtures/make_hf_cls_fixture.py.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "apps/finetune_common.h"
#include "engine/safetensors.h"
#include "models/hf_checkpoint.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

template <class T>
std::vector<T> entry(const SafetensorsFile& file, const std::string& name) {
  const SafetensorsEntry* e = file.find(name);
  REQUIRE(e != nullptr);
  std::vector<T> out(static_cast<size_t>(e->numel()));
  std::memcpy(out.data(), file.data(*e), e->nbytes);
  return out;
}

}  // namespace

TEST_CASE("an HF ElectraForSequenceClassification checkpoint gives HF's logits", "[fixture]") {
  const std::string dir = std::string(ELECTRA_SOURCE_DIR) + "/test/fixtures/hf_cls_tiny";
  const SafetensorsFile fixture = SafetensorsFile::read(dir + "/fixture.safetensors");
  const apps::FinetuneInit init = apps::resolve_init(dir);
  CHECK(init.encoder.hidden == 32);
  CHECK(init.encoder.vocab_size == 97);

  Context ctx = Context::cpu(1, Precision::F32);
  TaskHeadConfig head;
  head.kind = TaskKind::kClassification;
  head.num_labels = 3;
  head.hf_two_layer = true;
  head.dropout = 0;
  FinetuneOptions options;
  options.batch = 3;
  options.seq_len = 16;
  ElectraFinetuner model(ctx, init.encoder, head, options);
  apps::load_finetune_init(ctx, model, init.model_dir, /*with_head=*/true);

  FinetuneBatch batch;
  batch.ids = entry<int32_t>(fixture, "input_ids");
  batch.segment_ids = entry<int32_t>(fixture, "token_type_ids");
  const FinetuneOutputs out = model.forward(ctx, batch);
  const std::vector<float> want = entry<float>(fixture, "logits");
  REQUIRE(out.logits.size() == want.size());
  CHECK(test::max_relative_error(out.logits, want) < 1e-5);
}

TEST_CASE("fine-tuning from an HF checkpoint skips its head, loading only the encoder",
          "[fixture]") {
  const std::string dir = std::string(ELECTRA_SOURCE_DIR) + "/test/fixtures/hf_cls_tiny";
  const apps::FinetuneInit init = apps::resolve_init(dir);
  Context ctx = Context::cpu(1, Precision::F32);
  TaskHeadConfig head;  // official one-layer head, 2 labels: shapes unlike the checkpoint's
  FinetuneOptions options;
  options.batch = 2;
  options.seq_len = 16;
  ElectraFinetuner model(ctx, init.encoder, head, options);
  model.init_weights(ctx, 3);
  const Tensor out_proj = model.store().param("discriminator/classifier.out_proj.weight");
  const std::vector<float> before(out_proj.ptr<float>(), out_proj.ptr<float>() + out_proj.numel());
  apps::load_finetune_init(ctx, model, init.model_dir, /*with_head=*/false);
  CHECK(std::vector<float>(out_proj.ptr<float>(), out_proj.ptr<float>() + out_proj.numel()) ==
        before);
  const SafetensorsFile weights = SafetensorsFile::read(dir + "/model.safetensors");
  const std::vector<float> query =
      entry<float>(weights, "electra.encoder.layer.1.attention.self.query.weight");
  const Tensor q =
      model.store().param("discriminator/electra.encoder.layer.1.attention.self.query.weight");
  CHECK(std::vector<float>(q.ptr<float>(), q.ptr<float>() + q.numel()) == query);
}

// Every kind of fine-tuned checkpoint, written with save_finetuned, reads back with the
// same outputs, and (hidden case "[.export_finetuned]") gives them to HF transformers, which
// hf_finetuned_check (test/fixtures/make_hf_fixtures.py --check-finetuned) verifies.
namespace {

struct Kind {
  const char* name;
  TaskHeadConfig head;
};

std::vector<Kind> checkpoint_kinds() {
  TaskHeadConfig official;  // classification, 3 labels, the official one-layer head
  official.num_labels = 3;
  official.dropout = 0;
  TaskHeadConfig two_layer = official;
  two_layer.hf_two_layer = true;
  TaskHeadConfig regression = official;
  regression.kind = TaskKind::kRegression;
  regression.num_labels = 1;
  TaskHeadConfig span = official;
  span.kind = TaskKind::kSpan;
  TaskHeadConfig answerable = span;
  answerable.answerability = true;
  return {{"classification_official", official},
          {"classification_hf_two_layer", two_layer},
          {"regression_official", regression},
          {"squad1.1", span},
          {"squad2.0", answerable}};
}

// The fixture encoder with a freshly drawn head whose biases are not zero.
std::unique_ptr<ElectraFinetuner> finetuned_model(Context& ctx, const TaskHeadConfig& head,
                                                  const std::string& encoder_dir) {
  const apps::FinetuneInit init = apps::resolve_init(encoder_dir);
  FinetuneOptions options;
  options.batch = 3;
  options.seq_len = 16;
  auto model = std::make_unique<ElectraFinetuner>(ctx, init.encoder, head, options);
  model->init_weights(ctx, 11);
  apps::load_finetune_init(ctx, *model, init.model_dir, /*with_head=*/false);
  for (const ParamInfo& p : model->store().params()) {
    if (p.name.find(".bias") == std::string::npos || p.name.find("electra.") != std::string::npos)
      continue;
    std::vector<float> bias(static_cast<size_t>(p.numel));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.3f - 0.25f * static_cast<float>(i);
    load_host_values(ctx, model->store(), p.name, bias);
  }
  return model;
}

// Logits, or start then end logits, of the fixture inputs.
std::vector<float> outputs_of(Context& ctx, ElectraFinetuner& model,
                              const SafetensorsFile& inputs) {
  FinetuneBatch batch;
  batch.ids = entry<int32_t>(inputs, "input_ids");
  batch.segment_ids = entry<int32_t>(inputs, "token_type_ids");
  FinetuneOutputs out = model.forward(ctx, batch);
  if (model.head_config().kind != TaskKind::kSpan) return out.logits;
  out.start_logits.insert(out.start_logits.end(), out.end_logits.begin(), out.end_logits.end());
  return out.start_logits;
}

data::ModelTokenizer fixture_tokenizer() {
  std::vector<std::string> tokens = {"[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"};
  while (tokens.size() < 97) tokens.push_back("w" + std::to_string(tokens.size()));
  return {data::Vocab::from_tokens(tokens, "fixture vocabulary"), true, "test"};
}

const std::string kClsFixtureDir = std::string(ELECTRA_SOURCE_DIR) + "/test/fixtures/hf_cls_tiny";

}  // namespace

TEST_CASE("every kind of fine-tuned checkpoint reloads with the same outputs", "[fixture]") {
  const SafetensorsFile inputs = SafetensorsFile::read(kClsFixtureDir + "/fixture.safetensors");
  Context ctx = Context::cpu(1, Precision::F32);
  const data::ModelTokenizer tokenizer = fixture_tokenizer();
  for (const Kind& kind : checkpoint_kinds()) {
    INFO(kind.name);
    auto model = finetuned_model(ctx, kind.head, kClsFixtureDir);
    const std::vector<float> before = outputs_of(ctx, *model, inputs);
    const std::string dir = std::string(ELECTRA_HF_FINETUNED_DIR) + "/reload/" + kind.name;
    apps::save_finetuned(ctx, *model, dir, {{"task", kind.name}}, tokenizer);
    // The official head is stored in HF's two-layer form (apps/finetune_checkpoint.h).
    const SafetensorsFile written = SafetensorsFile::read(dir + "/model.safetensors");
    CHECK((written.find("classifier.dense.weight") != nullptr) ==
          (kind.head.kind != TaskKind::kSpan));
    ElectraFinetuner reloaded(ctx, model->encoder_config(), kind.head, model->options());
    apps::load_finetune_init(ctx, reloaded, dir, /*with_head=*/true);
    CHECK(test::max_relative_error(outputs_of(ctx, reloaded, inputs), before) < 1e-6);
  }
}

TEST_CASE("a classifier.dense that is not the official head's identity is refused", "[fixture]") {
  Context ctx = Context::cpu(1, Precision::F32);
  TaskHeadConfig two_layer = checkpoint_kinds()[1].head;
  auto model = finetuned_model(ctx, two_layer, kClsFixtureDir);
  const std::string dir = std::string(ELECTRA_HF_FINETUNED_DIR) + "/not_identity";
  apps::save_finetuned(ctx, *model, dir, {{"task", "MNLI"}}, fixture_tokenizer());
  TaskHeadConfig official = checkpoint_kinds()[0].head;
  ElectraFinetuner reloaded(ctx, model->encoder_config(), official, model->options());
  CHECK_THROWS_WITH(apps::load_finetune_init(ctx, reloaded, dir, true),
                    Catch::Contains("classifier.dense is not the identity"));
}

TEST_CASE("export every kind of fine-tuned checkpoint for hf_finetuned_check",
          "[.export_finetuned]") {
  const SafetensorsFile inputs = SafetensorsFile::read(kClsFixtureDir + "/fixture.safetensors");
  Context ctx = Context::cpu(1, Precision::F32);
  const data::ModelTokenizer tokenizer = fixture_tokenizer();
  for (const Kind& kind : checkpoint_kinds()) {
    auto model = finetuned_model(ctx, kind.head, kClsFixtureDir);
    std::vector<float> outputs = outputs_of(ctx, *model, inputs);
    const std::string dir = std::string(ELECTRA_HF_FINETUNED_DIR) + "/export/" + kind.name;
    apps::save_finetuned(ctx, *model, dir, {{"task", kind.name}}, tokenizer);
    std::vector<int32_t> ids = entry<int32_t>(inputs, "input_ids");
    std::vector<int32_t> segments = entry<int32_t>(inputs, "token_type_ids");
    const int64_t n = static_cast<int64_t>(outputs.size());
    write_safetensors(dir + "/engine_outputs.safetensors",
                      {{"input_ids", Tensor::view_of(ids.data(), Device::CPU, {3, 16})},
                       {"token_type_ids", Tensor::view_of(segments.data(), Device::CPU, {3, 16})},
                       {"outputs", Tensor::view_of(outputs.data(), Device::CPU, {n})}},
                      {{"format", "pt"}});
  }
}
