// Layer-wise LR decay (optim/layerwise_lr.h) for a 12-layer model: every parameter's factor, in
// the paper's convention and with the official off-by-one, and its effect through the Optimizer.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "engine/context.h"
#include "optim/layerwise_lr.h"

using namespace electra;

namespace {

// The parameter names of ElectraModel with 12 layers and an embedding projection, under the
// store's "discriminator/" prefix, paired with their layer (-1: embeddings), then two head
// parameters (layer 12 marks the head).
struct Named {
  std::string name;
  int layer;
};

std::vector<Named> twelve_layer_names() {
  const std::string p = "discriminator/electra.";
  std::vector<Named> out;
  for (const char* e :
       {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias", "embeddings_project.weight", "embeddings_project.bias"}) {
    out.push_back({p + e, -1});
  }
  const char* per_layer[] = {"attention.self.query.weight",
                             "attention.self.query.bias",
                             "attention.self.key.weight",
                             "attention.self.key.bias",
                             "attention.self.value.weight",
                             "attention.self.value.bias",
                             "attention.output.dense.weight",
                             "attention.output.dense.bias",
                             "attention.output.LayerNorm.weight",
                             "attention.output.LayerNorm.bias",
                             "intermediate.dense.weight",
                             "intermediate.dense.bias",
                             "output.dense.weight",
                             "output.dense.bias",
                             "output.LayerNorm.weight",
                             "output.LayerNorm.bias"};
  for (int l = 0; l < 12; ++l) {
    for (const char* s : per_layer) {
      out.push_back({p + "encoder.layer." + std::to_string(l) + "." + s, l});
    }
  }
  out.push_back({"discriminator/classifier.out_proj.weight", 12});
  out.push_back({"discriminator/classifier.out_proj.bias", 12});
  return out;
}

}  // namespace

TEST_CASE("layer-wise LR factors of every parameter of a 12-layer model", "[layerwise_lr]") {
  const std::vector<Named> names = twelve_layer_names();
  REQUIRE(names.size() == 7 + 12 * 16 + 2);
  for (bool official : {false, true}) {
    const LayerwiseLrDecay config{0.8, 12, official};
    const int extra = official ? 1 : 0;
    for (const Named& n : names) {
      INFO(n.name << (official ? " (official)" : ""));
      // Head 0; layer l: 12 - l (+1 official); embeddings 13 (+1 official).
      const int depth = n.layer == 12 ? 0 : n.layer < 0 ? 13 + extra : 12 - n.layer + extra;
      CHECK(layerwise_lr_depth(n.name, config) == depth);
      CHECK(layerwise_lr_factor(n.name, config) == Approx(std::pow(0.8, depth)).epsilon(1e-12));
    }
  }
  // Spot values written out: the paper's rule, then the official code's exponents
  // decay^(n_layers + 2 - depth) with depth 0 / i + 1 / n_layers + 2.
  const LayerwiseLrDecay paper{0.8, 12, false}, official{0.8, 12, true};
  const std::string top = "discriminator/electra.encoder.layer.11.output.dense.weight";
  const std::string bottom = "discriminator/electra.encoder.layer.0.attention.self.key.bias";
  const std::string word = "discriminator/electra.embeddings.word_embeddings.weight";
  CHECK(layerwise_lr_factor(top, paper) == Approx(0.8));
  CHECK(layerwise_lr_factor(top, official) == Approx(0.64));
  CHECK(layerwise_lr_factor(bottom, paper) == Approx(0.068719476736));      // 0.8^12
  CHECK(layerwise_lr_factor(bottom, official) == Approx(0.0549755813888));  // 0.8^13
  CHECK(layerwise_lr_factor(word, paper) == Approx(0.0549755813888));       // 0.8^13
  CHECK(layerwise_lr_factor(word, official) == Approx(0.04398046511104));   // 0.8^14
  CHECK(layerwise_lr_factor("discriminator/qa_outputs.bias", official) == 1.0);
  // Large: 0.9 over 24 layers.
  const LayerwiseLrDecay large{0.9, 24, false};
  CHECK(layerwise_lr_factor("discriminator/electra.encoder.layer.23.output.dense.bias", large) ==
        Approx(0.9));
  CHECK(layerwise_lr_factor("discriminator/electra.embeddings_project.weight", large) ==
        Approx(std::pow(0.9, 25)));
}

TEST_CASE("layer-wise LR refuses unknown encoder names and bad settings", "[layerwise_lr]") {
  const LayerwiseLrDecay config{0.8, 12, false};
  CHECK_THROWS_WITH(
      layerwise_lr_depth("discriminator/electra.encoder.layer.12.output.dense.weight", config),
      Catch::Contains("layer 12") && Catch::Contains("12 layers"));
  CHECK_THROWS_AS(layerwise_lr_depth("discriminator/electra.pooler.dense.weight", config), Error);
  CHECK_THROWS_AS(
      layerwise_lr_depth("discriminator/electra.encoder.layer.x.output.dense.weight", config),
      Error);
  CHECK_THROWS_WITH(layerwise_lr_multiplier(LayerwiseLrDecay{1.5, 12, false}),
                    Catch::Contains("layerwise_lr_decay") && Catch::Contains("(0, 1]"));
  CHECK_THROWS_AS(layerwise_lr_multiplier(LayerwiseLrDecay{0.8, 0, false}), UserError);
}

TEST_CASE("the Optimizer applies the layer-wise factors per parameter", "[layerwise_lr]") {
  // One AdamW step with unit gradients, no clipping and no weight decay moves every parameter
  // by lr x factor x u with the same u (m / (sqrt(v) + eps)), so the ratio of each
  // parameter's move to the head's is its factor.
  Context ctx = Context::cpu();
  ParameterStore store;
  store.add("discriminator/electra.embeddings.word_embeddings.weight", {4, 2},
            ParamKind::kEmbedding);
  store.add("discriminator/electra.encoder.layer.0.output.dense.weight", {2, 2},
            ParamKind::kWeight);
  store.add("discriminator/electra.encoder.layer.1.output.dense.bias", {2}, ParamKind::kBias);
  store.add("discriminator/classifier.out_proj.weight", {3, 2}, ParamKind::kWeight);
  Arena params("params", Device::CPU, store.bytes_needed());
  Arena grads("grads", Device::CPU, store.bytes_needed());
  store.allocate(params, grads);
  float* p = store.flat_params().ptr<float>();
  float* g = store.flat_grads().ptr<float>();
  for (int64_t i = 0; i < store.total_elements(); ++i) p[i] = 0.0f, g[i] = 1.0f;
  OptimizerConfig c;
  c.weight_decay = 0;
  c.max_grad_norm = 0;
  c.schedule = LrSchedule{ScheduleKind::kConstant, 1e-2, 0, 10};
  Arena state("state", Device::CPU, Optimizer::state_bytes(store, c.kind));
  const LayerwiseLrDecay decay{0.5, 2, false};
  Optimizer opt(ctx, store, c, state, layerwise_lr_multiplier(decay));
  opt.step(ctx, 0);
  const float head = store.param("discriminator/classifier.out_proj.weight").ptr<float>()[0];
  REQUIRE(head < 0);
  const double expected[] = {0.125, 0.25, 0.5, 1.0};  // embeddings (3), layer 0 (2), 1 (1), head
  for (size_t i = 0; i < store.params().size(); ++i) {
    const Tensor t = store.param(i);
    INFO(store.params()[i].name);
    for (int64_t j = 0; j < t.numel(); ++j) {
      CHECK(t.ptr<float>()[j] / head == Approx(expected[i]).epsilon(1e-6));
    }
  }
}
