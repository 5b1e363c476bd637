// Issue 7 fixture: the logits of an HF ElectraForSequenceClassification checkpoint (two-layer
// head), loaded through the fine-tuning loader, match HF transformers on the CPU (1e-5).
// Regenerate with test/fixtures/make_hf_cls_fixture.py.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "apps/finetune_common.h"
#include "engine/safetensors.h"
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
