#include "models/init.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/host_transfer.h"

namespace electra {

double truncated_normal(const RngStream& stream, uint64_t element, double std) {
  constexpr double kTwoPi = 6.283185307179586;
  double z = 0;
  for (uint64_t attempt = 0; attempt < 8; ++attempt) {
    const uint64_t base = (element * 8 + attempt) * 2;
    const double u1 = uniform_open01(stream.bits(base));
    const double u2 = uniform01(stream.bits(base + 1));
    z = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
    if (std::abs(z) <= 2.0) return z * std;
  }
  return std::clamp(z, -2.0, 2.0) * std;
}

void init_electra_weights(Context& ctx, const ModelWeights& weights, uint64_t seed) {
  const ParameterStore& store = weights.store;
  std::vector<double> host(static_cast<size_t>(store.total_elements()), 0.0);
  const auto& params = store.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    const RngStream stream{seed, RngPurpose::kInit, static_cast<uint32_t>(i), 0};
    for (int64_t j = 0; j < p.numel; ++j) {
      double value = 0;
      switch (p.kind) {
        case ParamKind::kWeight:
        case ParamKind::kEmbedding:
          value = truncated_normal(stream, static_cast<uint64_t>(j), 0.02);
          break;
        case ParamKind::kLayerNormGamma:
          value = 1;
          break;
        case ParamKind::kBias:
        case ParamKind::kLayerNormBeta:
          value = 0;
          break;
      }
      host[static_cast<size_t>(p.offset + j)] = value;
    }
  }
  if (store.flat_params().dtype == DType::F64) {
    upload_to(ctx, store.flat_params(), host);
  } else {
    upload_to(ctx, store.flat_params(), std::vector<float>(host.begin(), host.end()));
  }
  weights.refresh_compute(ctx);
}

}  // namespace electra
