#include <vector>

#include "kernels/replace_tokens.h"

namespace electra::cpu {}  // namespace electra::cpu

namespace electra {

void ReplaceTokens::cpu(Context&) const {
  const int64_t batch = ids.dim(0), len = ids.dim(1), slots = positions.dim(1);
  const int32_t* in = ids.ptr<int32_t>();
  const int32_t* pos = positions.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  const int32_t* sample = samples.ptr<int32_t>();
  int32_t* out = replaced.ptr<int32_t>();
  int32_t* label = labels.ptr<int32_t>();
  std::vector<bool> taken(static_cast<size_t>(len));
  for (int64_t b = 0; b < batch; ++b) {
    std::fill(taken.begin(), taken.end(), false);
    for (int64_t t = 0; t < len; ++t) out[b * len + t] = in[b * len + t];
    for (int64_t k = 0; k < slots; ++k) {
      if (!(w[b * slots + k] > 0)) continue;
      const int32_t p = pos[b * slots + k];
      ELECTRA_USER_CHECK(p >= 0 && p < len, "replace_tokens: position ", p, " at (batch ", b,
                         ", slot ", k, ") is outside [0, ", len, ")");
      ELECTRA_USER_CHECK(!taken[p], "replace_tokens: position ", p, " repeats at (batch ", b,
                         ", slot ", k, ")");
      taken[p] = true;
      out[b * len + p] = sample[b * slots + k];
    }
    for (int64_t t = 0; t < len; ++t) label[b * len + t] = out[b * len + t] != in[b * len + t];
  }
}

}  // namespace electra
