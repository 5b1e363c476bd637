#include "kernels/unigram_sample.h"

namespace electra {

std::vector<double> unigram_cdf(const std::vector<uint64_t>& counts) {
  std::vector<double> cdf(counts.size());
  uint64_t total = 0;
  constexpr uint64_t kExact = uint64_t{1} << 53;  // f64 holds every integer below
  for (size_t v = 0; v < counts.size(); ++v) {
    ELECTRA_USER_CHECK(counts[v] < kExact - total, "unigram counts: the total reaches 2^53");
    total += counts[v];
    cdf[v] = static_cast<double>(total);
  }
  ELECTRA_USER_CHECK(total > 0, "unigram counts: no token was counted");
  return cdf;
}

void UnigramSample::cpu(Context&) const {
  const RngStream resolved = stream.resolved();
  const double* table = cdf.ptr<double>();
  ELECTRA_CHECK(table[cdf.numel() - 1] >= 1, "unigram_sample: empty distribution");
  int32_t* out = samples.ptr<int32_t>();
  for (int64_t i = 0; i < samples.numel(); ++i)
    out[i] = unigram_draw(table, cdf.numel(), resolved, i);
}

}  // namespace electra
