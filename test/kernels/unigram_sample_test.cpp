// unigram_sample on the CPU: samples follow the counts (chi-square), zero counts are never drawn,
// the draw is a pure function of the stream (its step read from memory as the step scalars hold
// it), and unigram_cdf refuses an empty table.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/unigram_sample.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

std::vector<int32_t> draw(const std::vector<double>& cdf, const RngStream& stream, int64_t m) {
  Context ctx = Context::cpu();
  std::vector<double> table = cdf;
  std::vector<int32_t> samples(static_cast<size_t>(m));
  run_op(ctx, UnigramSample{
                  .cdf = test::view(table), .stream = stream, .samples = Out(test::view(samples))});
  return samples;
}

}  // namespace

TEST_CASE("unigram samples follow the counts within a chi-square bound", "[unigram]") {
  // Counts spanning three orders of magnitude, with zeros (tokens never seen, e.g. [PAD]).
  std::vector<uint64_t> counts = {0, 1, 5, 0, 40, 300, 1000, 7, 2500, 60, 0, 150, 900, 12, 3};
  const std::vector<double> cdf = unigram_cdf(counts);
  const double total = cdf.back();
  const int64_t m = 400000;
  const std::vector<int32_t> samples = draw(cdf, RngStream{7, RngPurpose::kSample, 3, 0}, m);
  std::vector<double> seen(counts.size(), 0.0);
  for (int32_t s : samples) {
    REQUIRE(s >= 0);
    REQUIRE(s < static_cast<int32_t>(counts.size()));
    seen[static_cast<size_t>(s)] += 1;
  }
  double chi2 = 0;
  int categories = 0;
  for (size_t v = 0; v < counts.size(); ++v) {
    if (counts[v] == 0) {
      CHECK(seen[v] == 0);  // never drawn
      continue;
    }
    const double expected = static_cast<double>(m) * static_cast<double>(counts[v]) / total;
    chi2 += (seen[v] - expected) * (seen[v] - expected) / expected;
    ++categories;
  }
  // df = categories - 1 = 11; the 99.99th percentile of chi-square(11) is 35.7.
  INFO("chi-square " << chi2 << " with " << categories - 1 << " degrees of freedom");
  CHECK(chi2 < 35.7);
  // And the test can fail: the same samples against uniform counts are far outside the bound.
  double chi2_uniform = 0;
  for (size_t v = 0; v < counts.size(); ++v) {
    if (counts[v] == 0) continue;
    const double expected = static_cast<double>(m) / categories;
    chi2_uniform += (seen[v] - expected) * (seen[v] - expected) / expected;
  }
  CHECK(chi2_uniform > 1000);
}

TEST_CASE("unigram draws are keyed by the stream, the step read from memory", "[unigram]") {
  const std::vector<double> cdf = unigram_cdf({3, 9, 1, 27, 0, 5});
  const RngStream fixed{11, RngPurpose::kSample, 42, 0};
  uint32_t step = 42;
  RngStream from_memory{11, RngPurpose::kSample, 0, 0};
  from_memory.step_at = &step;
  const std::vector<int32_t> a = draw(cdf, fixed, 1000);
  CHECK(draw(cdf, fixed, 1000) == a);        // deterministic
  CHECK(draw(cdf, from_memory, 1000) == a);  // the step scalars' micro-step
  step = 43;
  CHECK(draw(cdf, from_memory, 1000) != a);  // a new micro-step draws anew
  // A prefix of the rows does not depend on how many rows are drawn.
  const std::vector<int32_t> head = draw(cdf, fixed, 10);
  CHECK(std::equal(head.begin(), head.end(), a.begin()));
}

TEST_CASE("unigram_cdf is cumulative and refuses an empty table", "[unigram]") {
  CHECK(unigram_cdf({2, 0, 3}) == std::vector<double>{2, 2, 5});
  CHECK_THROWS_AS(unigram_cdf({0, 0, 0}), UserError);
  CHECK_THROWS_AS(unigram_cdf({uint64_t{1} << 52, uint64_t{1} << 52}), UserError);
}
