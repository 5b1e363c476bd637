#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "engine/yaml_config.h"

using namespace electra;

namespace {
const char* kConfig = R"(model:
  hidden: 256
  layers: 12
optimizer:
  lr: 5.0e-4
  bias_correction: false
  name: adamw
steps: 1000
)";
}

TEST_CASE("config values are read with types, defaults and sections", "[config]") {
  ConfigNode root = ConfigNode::parse(kConfig, "small.yaml");
  ConfigNode model = root.section("model");
  CHECK(model.require<int>("hidden") == 256);
  CHECK(model.get<int>("layers", 1) == 12);
  CHECK(model.get<int>("heads", 4) == 4);
  ConfigNode opt = root.section("optimizer");
  CHECK(opt.get<double>("lr", 0) == 5e-4);
  CHECK(opt.get<bool>("bias_correction", true) == false);
  CHECK(opt.choice("name", "lamb", {"adamw", "lamb"}) == "adamw");
  CHECK(root.require<int64_t>("steps") == 1000);
  CHECK(root.section("absent").get<int>("x", 7) == 7);
  CHECK_NOTHROW(root.finish());
}

TEST_CASE("unknown keys are errors naming the file, line and dotted key", "[config]") {
  ConfigNode root = ConfigNode::parse(kConfig, "small.yaml");
  root.section("model").require<int>("hidden");
  root.section("optimizer").get<double>("lr", 0);
  root.require<int>("steps");
  CHECK_THROWS_WITH(root.finish(), "small.yaml:3: unknown key 'model.layers'");
}

TEST_CASE("wrong types and missing keys are errors naming the key and line", "[config]") {
  ConfigNode root = ConfigNode::parse("a:\n  n: fast\n  b: maybe\n  big: 99999999999\n", "c.yaml");
  ConfigNode a = root.section("a");
  CHECK_THROWS_WITH(a.get<double>("n", 0), "c.yaml:2: a.n: expected a number, got 'fast'");
  CHECK_THROWS_WITH(a.get<bool>("b", false), "c.yaml:3: a.b: expected true or false, got 'maybe'");
  CHECK_THROWS_WITH(a.get<int>("big", 0), Catch::Contains("c.yaml:4: a.big: expected an integer"));
  CHECK_THROWS_WITH(a.require<int>("missing"), Catch::Contains("missing required key 'a.missing'"));
  CHECK_THROWS_WITH(a.choice("n", "x", {"x", "y"}), Catch::Contains("'fast' is not one of: x, y"));
  CHECK_THROWS_WITH(root.section("a").section("n"), Catch::Contains("expected a mapping"));
}

TEST_CASE("invalid YAML and missing files are user errors", "[config]") {
  CHECK_THROWS_WITH(ConfigNode::parse("a: [1, 2\n", "bad.yaml"),
                    Catch::StartsWith("bad.yaml:") && Catch::Contains("invalid YAML"));
  CHECK_THROWS_WITH(ConfigNode::load("/nonexistent/x.yaml"),
                    Catch::Contains("/nonexistent/x.yaml: cannot open config"));
  CHECK_THROWS_WITH(ConfigNode::parse("- 1\n- 2\n", "list.yaml"),
                    Catch::Contains("top level must be a mapping"));
}

TEST_CASE("overrides (--set a.b=c) apply to existing keys only", "[config]") {
  ConfigNode root = ConfigNode::parse(kConfig, "small.yaml");
  root.apply_override("optimizer.lr=1e-3");
  root.apply_override("steps=20");
  CHECK(root.section("optimizer").get<double>("lr", 0) == 1e-3);
  CHECK(root.require<int>("steps") == 20);
  CHECK_THROWS_WITH(root.apply_override("optimizer.lr_peak=1"),
                    Catch::Contains("no key 'optimizer.lr_peak'"));
  CHECK_THROWS_WITH(root.apply_override("optimiser.lr=1"),
                    Catch::Contains("no section 'optimiser'"));
  CHECK_THROWS_WITH(root.apply_override("steps"), Catch::Contains("expected section.key=value"));
}

TEST_CASE("duplicate and complex keys are errors naming the lines", "[config]") {
  CHECK_THROWS_WITH(ConfigNode::parse("train:\n  steps: 1\n  seed: 2\n  steps: 3\n", "d.yaml"),
                    "d.yaml:4: duplicate key 'train.steps' (first on line 2)");
  CHECK_THROWS_WITH(ConfigNode::parse("a: 1\n? [x, y]\n: 2\n", "c.yaml"),
                    Catch::Contains("c.yaml:2: a key is a list; keys must be plain names"));
  // Inside lists too (a mapping of a list item).
  CHECK_THROWS_WITH(ConfigNode::parse("l:\n  - {k: 1, k: 2}\n", "l.yaml"),
                    Catch::Contains("l.yaml:2: duplicate key 'l.k'"));
}

TEST_CASE("an alias that names its own mapping, or an alias explosion, is an error", "[config]") {
  // The fuzzer's finding: the walk over keys recursed through the cycle until the stack ran out.
  CHECK_THROWS_WITH(ConfigNode::parse("base: &b\n  <<: *b\n  preset: x\n", "cyc.yaml"),
                    Catch::Contains("cyc.yaml:") && Catch::Contains("'base.<<' contains itself"));
  CHECK_THROWS_WITH(ConfigNode::parse("l: &l [1, *l]\n", "seq.yaml"),
                    Catch::Contains("contains itself through an alias"));
  // 2^20 leaves from 21 short lines: refused by count, quickly.
  std::string doubling = "a0: &a0 [x, x]\n";
  for (int i = 1; i <= 20; ++i) {
    doubling += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" +
                std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  }
  CHECK_THROWS_WITH(ConfigNode::parse(doubling, "bomb.yaml"),
                    Catch::Contains("bomb.yaml: the config expands to more than 65536 values"));
  // Aliases that do not loop stay allowed.
  ConfigNode root = ConfigNode::parse("x: &v 3\ny: *v\n", "ok.yaml");
  CHECK(root.get<int64_t>("y", 0) == 3);
}

TEST_CASE("an override whose value is not YAML is an error naming the override", "[config]") {
  ConfigNode root = ConfigNode::parse("train:\n  steps: 1\n", "o.yaml");
  CHECK_THROWS_WITH(root.apply_override("train.steps=[1"),
                    Catch::StartsWith("--set train.steps=[1: the value is not valid YAML"));
  CHECK_THROWS_WITH(root.apply_override("train.steps={a: 1, a: 2}"),
                    Catch::Contains("duplicate key 'train.steps.a'"));
}

TEST_CASE("a directory or a FIFO given as the config is refused without reading it", "[config]") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("electra_yaml_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH(ConfigNode::load(dir), dir + ": is a directory, expected a config");
  const std::string fifo = dir + "/pipe.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(ConfigNode::load(fifo), Catch::Contains("is a FIFO (named pipe)"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a bad --set value is reported as that --set; create adds a known key", "[config]") {
  ConfigNode root = ConfigNode::parse(kConfig, "small.yaml");
  root.apply_override("steps=many");
  CHECK_THROWS_WITH(root.require<int>("steps"),
                    Catch::StartsWith("--set steps=many: steps: expected an integer"));
  ConfigNode created = ConfigNode::parse(kConfig, "small.yaml");
  created.apply_override("tasks.mnli.epochs=2", /*create=*/true);
  CHECK(created.section("tasks").section("mnli").get<int>("epochs", 0) == 2);
}
