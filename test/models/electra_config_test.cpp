#include <catch2/catch.hpp>

#include "engine/str.h"
#include "models/electra_config.h"

using namespace electra;

TEST_CASE(
    "paper presets and the generator-size rule (Table 6, generator at 1/4 to 1/2 of the "
    "discriminator)",
    "[config]") {
  const ElectraConfig small = electra_preset("small");
  CHECK(small.discriminator.hidden == 256);
  CHECK(small.discriminator.embedding_size == 128);
  CHECK(small.discriminator.has_projection());
  const EncoderConfig small_gen = small.generator();
  CHECK(small_gen.hidden == 64);
  CHECK(small_gen.ffn == 256);
  CHECK(small_gen.heads == 1);
  CHECK(small_gen.layers == 12);
  CHECK(small_gen.embedding_size == 128);  // shared tables

  const EncoderConfig base_gen = electra_preset("base").generator();
  CHECK(base_gen.hidden == 256);
  CHECK(base_gen.heads == 4);
  CHECK(base_gen.ffn == 1024);
  CHECK_FALSE(electra_preset("base").discriminator.has_projection());

  const ElectraConfig large = electra_preset("large");
  CHECK(large.discriminator.layers == 24);
  CHECK(large.generator().hidden == 256);
  CHECK(large.generator().heads == 4);
  CHECK_THROWS_WITH(electra_preset("huge"), Catch::Contains("unknown model preset 'huge'"));
}

TEST_CASE("model sections override presets and are validated", "[config]") {
  ConfigNode root = ConfigNode::parse(
      "model:\n  preset: tiny\n  hidden: 96\n  heads: 3\n  generator_multiplier: 0.5\n", "m.yaml");
  const ElectraConfig c = read_electra_config(root.section("model"));
  CHECK(c.discriminator.hidden == 96);
  CHECK(c.discriminator.head_dim() == 32);
  CHECK(c.generator().hidden == 48);
  CHECK(c.generator().heads == 1);
  CHECK_NOTHROW(root.finish());

  ConfigNode bad = ConfigNode::parse("model:\n  preset: tiny\n  heads: 5\n", "bad.yaml");
  CHECK_THROWS_WITH(read_electra_config(bad.section("model")),
                    Catch::Contains("model.hidden (128) is not divisible by model.heads (5)"));
  ConfigNode bad_gen = ConfigNode::parse("model:\n  generator_multiplier: 2\n", "g.yaml");
  CHECK_THROWS_WITH(read_electra_config(bad_gen.section("model")),
                    Catch::Contains("generator_multiplier must be in (0, 1]"));
}

TEST_CASE("model.weight_grad_group is read for both encoders, 0 (all layers) by default",
          "[config]") {
  CHECK(electra_preset("small").discriminator.weight_grad_group == 0);
  ConfigNode root = ConfigNode::parse("model:\n  preset: tiny\n  weight_grad_group: 3\n", "w.yaml");
  const ElectraConfig c = read_electra_config(root.section("model"));
  CHECK(c.discriminator.weight_grad_group == 3);
  CHECK(c.generator().weight_grad_group == 3);
  ConfigNode bad = ConfigNode::parse("model:\n  weight_grad_group: -1\n", "w.yaml");
  CHECK_THROWS_WITH(read_electra_config(bad.section("model")),
                    Catch::Contains("model.weight_grad_group must be >= 0"));
}

TEST_CASE("model.attention picks the GPU's attention for both encoders, auto by default",
          "[config]") {
  CHECK(electra_preset("small").discriminator.attention == AttentionImpl::kAuto);
  const std::pair<const char*, AttentionImpl> names[] = {
      {"auto", AttentionImpl::kAuto},
      {"unfused", AttentionImpl::kUnfused},
      {"flash", AttentionImpl::kFlash},
      {"flash_ds", AttentionImpl::kFlashDsGemm},
      {"flash_short", AttentionImpl::kFlashShort}};
  for (const auto& [name, impl] : names) {
    ConfigNode root =
        ConfigNode::parse(str_cat("model:\n  preset: tiny\n  attention: ", name, "\n"), "a.yaml");
    const ElectraConfig c = read_electra_config(root.section("model"));
    CHECK(c.discriminator.attention == impl);
    CHECK(c.generator().attention == impl);
  }
  ConfigNode bad = ConfigNode::parse("model:\n  attention: fast\n", "a.yaml");
  CHECK_THROWS_WITH(read_electra_config(bad.section("model")),
                    Catch::Contains("model.attention") && Catch::Contains("'fast'"));

  // An explicit flash choice must fit flash's shapes (T <= 512, head dim <= 128); auto and
  // unfused run every shape.
  EncoderConfig small = electra_preset("small").discriminator;  // head dim 64
  for (const auto& [name, impl] : names) {
    small.attention = impl;
    CHECK_NOTHROW(check_attention_fits(small, 512, "k"));
    const bool any_shape = impl == AttentionImpl::kAuto || impl == AttentionImpl::kUnfused;
    if (any_shape) {
      CHECK_NOTHROW(check_attention_fits(small, 513, "k"));
    } else {
      CHECK_THROWS_WITH(check_attention_fits(small, 513, "k"),
                        Catch::Contains(str_cat("k ", name, " needs T <= 512")) &&
                            Catch::Contains("got T = 513, head dim 256 / 4 = 64"));
    }
  }
}

TEST_CASE("model.fused_layers: true by default, false for both encoders, a bool", "[config]") {
  CHECK(electra_preset("small").discriminator.fused_layers);
  ConfigNode root = ConfigNode::parse("model:\n  fused_layers: false\n", "f.yaml");
  const ElectraConfig c = read_electra_config(root.section("model"));
  CHECK_FALSE(c.discriminator.fused_layers);
  CHECK_FALSE(c.generator().fused_layers);
  ConfigNode bad = ConfigNode::parse("model:\n  fused_layers: sometimes\n", "f.yaml");
  CHECK_THROWS_WITH(read_electra_config(bad.section("model")),
                    Catch::Contains("model.fused_layers"));
}

TEST_CASE("model sizes are bounded before anything is computed from them", "[config]") {
  auto read = [](const std::string& field, const std::string& value) {
    ConfigNode root =
        ConfigNode::parse("model:\n  preset: tiny\n  " + field + ": " + value + "\n", "b.yaml");
    return read_electra_config(root.section("model"));
  };
  // 4 x hidden overflows an int at 2^30; 200000 layers would allocate for minutes.
  CHECK_THROWS_WITH(read("hidden", "1073741824"), Catch::Contains("model.hidden must be in [1, "));
  CHECK_THROWS_WITH(read("layers", "200000"), Catch::Contains("model.layers must be in [1, "));
  CHECK_THROWS_WITH(read("vocab_size", "2000000000"),
                    Catch::Contains("model.vocab_size must be in [1, "));
  // Each size within its bound, the product beyond the parameter limit.
  ConfigNode big = ConfigNode::parse(
      "model:\n  preset: large\n  layers: 1000\n  hidden: 16384\n  heads: 16\n  ffn: 65536\n",
      "big.yaml");
  CHECK_THROWS_WITH(read_electra_config(big.section("model")),
                    Catch::Contains("billion parameters") && Catch::Contains("limit"));
  CHECK_NOTHROW(read("layers", "24"));
}
