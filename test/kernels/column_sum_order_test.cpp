// The finishing order of the GPU column sums (kernels/column_sum_order.h): halve_chains, the
// register halving a thread applies to one column, gives the bits of the shared-memory halving the
// finishing block applied to 32 columns at a time before (the loop below, copied from
// kernels/column_sum.cuh's narrow path), for every chain count it serves (1, 2, 4, 8), with
// chains of mixed magnitudes and signs so that another order gives other bits (checked too).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/column_sum_order.h"

using namespace electra;

namespace {

// The shared-memory halving: scratch[lane * cols + x] holds chain `lane` of column x; for half =
// lanes / 2, ..., 1 the first half * cols entries add the entries half * cols further on.
std::vector<float> shared_halving(std::vector<float> scratch, int lanes, int cols) {
  for (int half = lanes / 2; half > 0; half /= 2) {
    for (int i = 0; i < half * cols; ++i) scratch[i] += scratch[i + half * cols];
  }
  scratch.resize(static_cast<size_t>(cols));
  return scratch;
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("halve_chains adds a column's chains in the shared-memory halving's order",
          "[column_sum]") {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 12);
  constexpr int kCols = 32;
  for (const int lanes : {1, 2, 4, 8}) {
    INFO("lanes " << lanes);
    int differs_from_serial = 0;
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> scratch(static_cast<size_t>(lanes * kCols));
      for (float& x : scratch) x = std::ldexp(mantissa(gen), exponent(gen));
      const std::vector<float> want = shared_halving(scratch, lanes, kCols);
      for (int c = 0; c < kCols; ++c) {
        float chain[kRegisterChains] = {};
        for (int y = 0; y < lanes; ++y) chain[y] = scratch[static_cast<size_t>(y * kCols + c)];
        float serial = 0.0f;  // another order: chain 0 + chain 1 + ... in turn
        for (int y = 0; y < lanes; ++y) serial += chain[y];
        const float got = halve_chains(chain, lanes);
        CHECK(same_bits(got, want[static_cast<size_t>(c)]));
        differs_from_serial += same_bits(got, serial) ? 0 : 1;
      }
    }
    // With 4 or more chains the order is visible in the bits (with 1 or 2 it cannot be).
    if (lanes >= 4) CHECK(differs_from_serial > 0);
  }
}
