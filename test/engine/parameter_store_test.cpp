#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "engine/parameter_store.h"

using namespace electra;

TEST_CASE("ParameterStore lays parameters out aligned in one flat buffer", "[params]") {
  ParameterStore store;
  store.add("electra.embeddings.word_embeddings.weight", {11, 4}, ParamKind::kEmbedding);
  store.add("electra.embeddings.LayerNorm.bias", {4}, ParamKind::kLayerNormBeta);
  store.add("discriminator_predictions.dense.weight", {3, 5}, ParamKind::kWeight);
  CHECK(store.parameter_count() == 44 + 4 + 15);
  CHECK(store.total_elements() == 64 * 3);
  Arena params("params", Device::CPU, store.bytes_needed());
  Arena grads("grads", Device::CPU, store.bytes_needed());
  store.allocate(params, grads);
  Tensor w = store.param("discriminator_predictions.dense.weight");
  CHECK(w.str() == "f32[3,5]@cpu");
  CHECK(w.ptr<float>() == store.flat_params().ptr<float>() + 128);
  CHECK(reinterpret_cast<uintptr_t>(w.data) % 256 == 0);
  CHECK(store.grad(1).ptr<float>() == store.flat_grads().ptr<float>() + 64);
  CHECK(store.info("electra.embeddings.LayerNorm.bias").kind == ParamKind::kLayerNormBeta);
  CHECK_FALSE(param_decays(ParamKind::kBias));
  CHECK(param_decays(ParamKind::kEmbedding));
}

TEST_CASE("ParameterStore rejects duplicates, late adds and unknown names", "[params]") {
  ParameterStore store;
  store.add("a", {2}, ParamKind::kBias);
  CHECK_THROWS_WITH(store.add("a", {3}, ParamKind::kBias), Catch::Contains("duplicate"));
  CHECK_THROWS_AS(store.add("z", {0}, ParamKind::kBias), Error);
  CHECK_THROWS_WITH(store.param("a"), Catch::Contains("before allocate"));
  Arena params("p", Device::CPU, store.bytes_needed(DType::F64));
  Arena grads("g", Device::CPU, store.bytes_needed(DType::F64));
  store.allocate(params, grads, DType::F64);
  CHECK(store.param("a").dtype == DType::F64);
  CHECK_THROWS_WITH(store.param("b"), Catch::Contains("no parameter named 'b'"));
  CHECK_THROWS_AS(store.add("c", {1}, ParamKind::kBias), Error);
}

TEST_CASE("ParameterStore packs unaligned parameters right after the previous one", "[params]") {
  ParameterStore store;
  store.add("q.weight", {3, 5}, ParamKind::kWeight);
  store.add("k.weight", {3, 5}, ParamKind::kWeight, /*aligned=*/false);
  store.add("v.weight", {3, 5}, ParamKind::kWeight, /*aligned=*/false);
  store.add("next", {2}, ParamKind::kBias);
  CHECK(store.info("k.weight").offset == 15);
  CHECK(store.info("v.weight").offset == 30);
  CHECK(store.info("next").offset == ParameterStore::kAlignElements);
  CHECK(store.total_elements() == 2 * ParameterStore::kAlignElements);
}

TEST_CASE("ParameterStore reserves padding rows outside the parameter", "[params]") {
  ParameterStore store;
  store.add("word", {5, 4}, ParamKind::kEmbedding, /*aligned=*/true, /*padded_rows=*/8);
  // Packing right after a padded parameter would put it into the padding.
  CHECK_THROWS_WITH(store.add("packed", {4}, ParamKind::kWeight, /*aligned=*/false),
                    Catch::Contains("padding rows"));
  CHECK_THROWS_WITH(store.add("short", {5}, ParamKind::kBias, true, 4), Catch::Contains("< 5"));
  store.add("bias", {5}, ParamKind::kBias, /*aligned=*/true, /*padded_rows=*/8);
  store.add("gamma", {4}, ParamKind::kLayerNormGamma);
  const ParamInfo& word = store.info("word");
  CHECK(word.shape == std::vector<int64_t>{5, 4});
  CHECK(word.padded_rows == 8);
  CHECK(word.padded_numel() == 32);
  CHECK(store.info("gamma").padded_rows == 4);  // no padding: the parameter's own rows
  CHECK(store.parameter_count() == 20 + 5 + 4);
  // Padded layout: word [0, 32), bias [64, 72), gamma [128, 132); without the padding rows the
  // same alignment rule gives word [0, 20), bias [64, 69), gamma [128, 132).
  CHECK(store.info("bias").offset == 64);
  CHECK(store.info("gamma").offset == 128);
  CHECK(store.total_elements() == 192);
  CHECK(store.info("bias").unpadded_offset == 64);
  CHECK(store.info("gamma").unpadded_offset == 128);
  CHECK(store.unpadded_total() == 192);

  Arena params("params", Device::CPU, store.bytes_needed());
  Arena grads("grads", Device::CPU, store.bytes_needed());
  store.allocate(params, grads);
  CHECK(store.param("word").str() == "f32[5,4]@cpu");
  CHECK(store.padded_param("word").str() == "f32[8,4]@cpu");
  CHECK(store.padded_param("word").data == store.param("word").data);
  CHECK(store.padded_grad("bias").str() == "f32[8]@cpu");
  CHECK(store.padded_grad("bias").data == store.grad("bias").data);
  CHECK(store.padded_param("gamma").str() == "f32[4]@cpu");
}

TEST_CASE("ParameterStore's unpadded layout drops the padding rows", "[params]") {
  ParameterStore store;
  store.add("word", {3, 40}, ParamKind::kEmbedding, true, 4);  // 120 values, 160 with padding
  store.add("next", {2}, ParamKind::kBias);
  CHECK(store.info("next").offset == 192);
  CHECK(store.info("next").unpadded_offset == 128);
  CHECK(store.unpadded_total() == 192);
  CHECK(store.total_elements() == 256);
}
