// Fuzz harness: the strict YAML config reader (engine/yaml_config.h) with a --set override. The
// input's first line is the override ("section.key=value"), the rest the YAML document; the model
// section is read as `electra pretrain` reads it (models/electra_config.h), then a few typed keys
// of other sections, then unknown keys are rejected (finish()).
#include <string>
#include <string_view>

#include "engine/error.h"
#include "engine/yaml_config.h"
#include "models/electra_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string assignment(input.substr(0, newline));
  const std::string text(newline == std::string_view::npos ? "" : input.substr(newline + 1));
  try {
    electra::ConfigNode root = electra::ConfigNode::parse(text, "fuzz.yaml");
    if (!assignment.empty()) root.apply_override(assignment);
    electra::read_electra_config(root.section("model"));
    electra::ConfigNode train = root.section("train");
    train.get<int64_t>("steps", 0);
    train.get<uint64_t>("seed", 0);
    train.get<double>("disc_weight", 50.0);
    train.get<bool>("flag", false);
    train.choice("device", "auto", {"auto", "cpu", "cuda"});
    root.section("data").get<std::string>("shards", "");
    root.finish();
  } catch (const electra::UserError&) {
  }
  return 0;
}
