// unigram_sample: replacement tokens drawn from a fixed unigram distribution (the paper's
// "unigram generator", Clark et al. 2020 section 3.2 and Figure 3 right), instead of an MLM
// generator's softmax.
//
// Shapes: cdf [V] f64, samples [M] i32. cdf holds cumulative token counts,
// cdf[v] = sum_{u <= v} count[u], integers with total = cdf[V - 1] in (0, 2^53) (exact in f64;
// unigram_cdf builds it). Row i draws the 64-bit r_i = bits(2i) << 32 | bits(2i + 1) of the
// stream and
//   samples[i] = min { v : cdf[v] > r_i mod total }
// so token v comes with probability count[v] / total (the modulo bias is below total / 2^64). A
// token with count 0 is never drawn. Integer and exact f64 comparisons only: CPU and GPU give the
// same samples for the same stream, whose step may live in device memory (RngStream::step_at: the
// micro-step of the step scalars, so a CUDA graph replays with fresh draws).
// No backward (nothing flows through a sample). No workspace.
#pragma once

#include <vector>

#include "engine/philox.h"
#include "kernels/dispatch.h"

namespace electra {

// Row i's sample (shared by the CPU reference and the kernel).
ELECTRA_HD int32_t unigram_draw(const double* cdf, int64_t vocab, const RngStream& stream,
                                int64_t i) {
  const uint64_t e = 2 * static_cast<uint64_t>(i);
  const uint64_t bits = static_cast<uint64_t>(stream.bits(e)) << 32 | stream.bits(e + 1);
  const auto total = static_cast<uint64_t>(cdf[vocab - 1]);
  const auto r = static_cast<double>(bits % total);  // < 2^53: exact
  int64_t lo = 0, hi = vocab - 1;                    // the answer lies in [lo, hi]
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cdf[mid] > r) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return static_cast<int32_t>(lo);
}

// The cdf of `counts` (host). UserError when every count is 0 or the total reaches 2^53.
std::vector<double> unigram_cdf(const std::vector<uint64_t>& counts);

struct UnigramSample {
  static constexpr const char* kName = "unigram_sample";
  In cdf;
  RngStream stream;
  Out samples;

  void check() const {
    ELECTRA_CHECK(cdf.rank == 1 && cdf.numel() > 0, "unigram_sample: cdf must be [V], got ",
                  cdf.str());
    check_dtype(cdf, DType::F64, "unigram_sample cdf");
    ELECTRA_CHECK(samples.rank == 1, "unigram_sample: samples must be [M], got ", samples.str());
    check_dtype(samples, DType::I32, "unigram_sample samples");
    if (samples.empty()) return;
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
