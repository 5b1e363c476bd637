#include "optim/loss_scaler.h"

#include <cmath>

#include "engine/error.h"

namespace electra {
namespace {

bool power_of_two(float x) {
  int exponent = 0;
  return std::isfinite(x) && x > 0 && std::frexp(x, &exponent) == 0.5f;
}

}  // namespace

LossScaler::LossScaler(const LossScalerConfig& config)
    : config_(config), scale_(config.initial_scale) {
  const bool finite = std::isfinite(config.initial_scale) && std::isfinite(config.min_scale) &&
                      std::isfinite(config.max_scale);
  ELECTRA_CHECK(finite && config.min_scale > 0 && config.min_scale <= config.initial_scale &&
                    config.initial_scale <= config.max_scale && config.growth_interval > 0,
                "LossScaler: scale ", config.initial_scale, " in [", config.min_scale, ", ",
                config.max_scale, "], growth interval ", config.growth_interval);
  ELECTRA_CHECK(
      !config.dynamic || (power_of_two(config.initial_scale) && power_of_two(config.min_scale) &&
                          power_of_two(config.max_scale)),
      "LossScaler: dynamic scales must be powers of two (initial ", config.initial_scale, ", min ",
      config.min_scale, ", max ", config.max_scale, ")");
}

bool LossScaler::update(float norm) {
  const bool finite = std::isfinite(norm);
  if (!config_.dynamic) return finite;
  if (!finite) {
    scale_ = std::fmax(config_.min_scale, scale_ / 2);
    good_steps_ = 0;
    return false;
  }
  if (++good_steps_ == config_.growth_interval) {
    scale_ = std::fmin(config_.max_scale, scale_ * 2);
    good_steps_ = 0;
  }
  return true;
}

}  // namespace electra
