#include "optim/layerwise_lr.h"

#include <cmath>
#include <string_view>

#include "engine/error.h"

namespace electra {

void LayerwiseLrDecay::validate(const std::string& what) const {
  ELECTRA_USER_CHECK(decay > 0 && decay <= 1, what,
                     ": layer-wise LR decay must lie in (0, 1], got ", decay);
  ELECTRA_USER_CHECK(layers >= 1, what,
                     ": layer-wise LR decay needs the number of layers (>= 1), got ", layers);
}

int layerwise_lr_depth(const std::string& name, const LayerwiseLrDecay& config) {
  // The HF name follows the "<model>/" prefix of the store.
  const size_t slash = name.rfind('/');
  const std::string_view local =
      std::string_view(name).substr(slash == std::string::npos ? 0 : slash + 1);
  constexpr std::string_view kEncoder = "electra.";
  if (local.substr(0, kEncoder.size()) != kEncoder) return 0;  // the task head
  const int extra = config.official_off_by_one ? 1 : 0;
  const std::string_view rest = local.substr(kEncoder.size());
  constexpr std::string_view kEmbeddings = "embeddings.", kProject = "embeddings_project.";
  if (rest.substr(0, kEmbeddings.size()) == kEmbeddings ||
      rest.substr(0, kProject.size()) == kProject) {
    return config.layers + 1 + extra;
  }
  constexpr std::string_view kLayer = "encoder.layer.";
  ELECTRA_CHECK(rest.substr(0, kLayer.size()) == kLayer, "layer-wise LR: parameter '", name,
                "' is neither the embeddings nor an encoder layer");
  const std::string_view digits =
      rest.substr(kLayer.size(), rest.find('.', kLayer.size()) - kLayer.size());
  int layer = 0;
  ELECTRA_CHECK(!digits.empty() && digits.size() <= 6 &&
                    digits.find_first_not_of("0123456789") == std::string_view::npos,
                "layer-wise LR: no layer index in '", name, "'");
  for (char c : digits) layer = layer * 10 + (c - '0');
  ELECTRA_CHECK(layer < config.layers, "layer-wise LR: '", name, "' is layer ", layer,
                " but the model has ", config.layers, " layers");
  return config.layers - layer + extra;
}

double layerwise_lr_factor(const std::string& name, const LayerwiseLrDecay& config) {
  return std::pow(config.decay, layerwise_lr_depth(name, config));
}

Optimizer::LrMultiplier layerwise_lr_multiplier(const LayerwiseLrDecay& config) {
  config.validate("layerwise_lr_decay");
  return [config](const ParamInfo& info) {
    return static_cast<float>(layerwise_lr_factor(info.name, config));
  };
}

}  // namespace electra
