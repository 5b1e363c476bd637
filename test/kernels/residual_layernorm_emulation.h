// CPU-side checks of the fused ops that end in kernels/layernorm_quad.cuh's epilogue
// (ffn_forward_test.cpp, output_layernorm_test.cpp): an emulation of the epilogue's roundings,
// and the parity checks of their harness cases run with the CPU standing in for the GPU, so that
// a bound that does not hold is found without a GPU.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/bf16.h"
#include "kernels/dropout_mask.h"
#include "test/common/op_case.h"
#include "test/common/test_util.h"

namespace electra::test {

inline float round_bf16(float v) {
  return bf16_to_float(float_to_bf16(v));
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The dropout site is used: with p = 0.1 about 10% of sum is the residual alone (0 + residual,
// exact), checked between 5% and 20%.
inline void check_dropout_used(const std::vector<float>& sum, const std::vector<float>& residual) {
  const auto n = static_cast<int64_t>(sum.size());
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) dropped += sum[i] == residual[i];
  CHECK(dropped > n / 20);
  CHECK(dropped < n / 5);
}

// The epilogue's arithmetic for row r of an op's f32 tensors holding bf16 values: o = bf16(acc(c)
// + bias[c]) for the row's f32 GEMM sums acc, sum = bf16(dropout(o) + residual) stored in
// a["sum"], the LayerNorm's f32 statistics (two-pass variance) in a["mean"], a["rstd"] and y in
// a["y"]. H = 64 columns, eps = 1e-12.
template <class Acc>
void emulate_epilogue(const Args& a, const char* bias, const char* residual,
                      const DropoutSite& site, int64_t r, Acc acc) {
  constexpr int64_t kH = 64;
  const float *b = a[bias].ptr<float>(), *res = a[residual].ptr<float>();
  const float *gamma = a["gamma"].ptr<float>(), *beta = a["beta"].ptr<float>();
  float *sum = a["sum"].ptr<float>() + r * kH, *y = a["y"].ptr<float>() + r * kH;
  const float scale = 1.0f / (1.0f - site.p);
  float total = 0;
  for (int64_t c = 0; c < kH; ++c) {
    const float o = round_bf16(acc(c) + b[c]);
    const bool keep = dropout_keep(site.stream, site.offset + r * kH + c, site.p);
    sum[c] = round_bf16((keep ? o * scale : 0.0f) + res[r * kH + c]);
    total += sum[c];
  }
  const float mu = total / kH;
  float sq = 0;
  for (int64_t c = 0; c < kH; ++c) sq += (sum[c] - mu) * (sum[c] - mu);
  const float rs = 1.0f / std::sqrt(sq / kH + 1e-12f);
  for (int64_t c = 0; c < kH; ++c) y[c] = round_bf16((sum[c] - mu) * rs * gamma[c] + beta[c]);
  a["mean"].ptr<float>()[r] = mu;
  a["rstd"].ptr<float>()[r] = rs;
}

// `c` with the inputs the GPU reads in bf16 made exact in bf16, so that an f32 run (the CPU
// standing in for the GPU) and its reference read the values a bf16 run would.
inline OpCase with_bf16_inputs(OpCase c) {
  for (TensorSpec& t : c.tensors) {
    if (t.role != Role::kInput || t.kind != Kind::kAct) continue;
    t.fill.make = [fill = t.fill](size_t n, uint64_t seed) {
      std::vector<double> v = random_vector<double>(n, seed, fill.lo, fill.hi);
      for (double& e : v) e = round_bf16(static_cast<float>(e));
      return v;
    };
  }
  return c;
}

// The parity checks of case `c` pass the CPU's f32 result (its errors are those of f32 alone),
// and each output of `names` moved by 4 bf16 roundings at one element fails the check of that
// output, the first failure (the checks run in spec order; the outputs after it, judged against
// what was written, may fail too).
inline void check_parity_names_moved(const OpCase& c, std::initializer_list<const char*> names) {
  Context device = Context::cpu(c.seed);
  CHECK(parity(c, DType::F32, device).empty());
  for (const char* name : names) {
    OpCase moved = c;
    moved.forward = [c, name](Context& ctx, const Args& a) {
      c.forward(ctx, a);
      float* v = a[name].ptr<float>();
      v[7] += 4 * std::abs(v[7]) / 256 + 1e-3f;
    };
    const std::vector<std::string> failures = parity(moved, DType::F32, device);
    REQUIRE_FALSE(failures.empty());
    CHECK_THAT(failures[0], Catch::StartsWith(std::string(name) + ":"));
  }
}

// The parity checks of case `c` (dropout p at dropout_site_offset(3)) pass `emulate`'s result on
// the inputs a bf16 run reads.
inline void check_emulation_within_bounds(
    const OpCase& c, float p, const std::function<void(const Args&, const DropoutSite&)>& emulate) {
  OpCase e = with_bf16_inputs(c);
  e.forward = [p, emulate](Context& ctx, const Args& a) {
    emulate(a, DropoutSite{ctx.rng(RngPurpose::kDropout, 8), dropout_site_offset(3), p});
  };
  Context device = Context::cpu(e.seed);
  const std::vector<std::string> failures = parity(e, DType::F32, device);
  for (const std::string& f : failures) UNSCOPED_INFO(f);
  CHECK(failures.empty());
}

// The parity checks of a fused op's 300-row cases, op_cases()[3] (p = 0) and [8] (p = 0.1): the
// first names each output of `moved` moved by a few bf16 roundings, and both pass `emulate`.
inline void check_parity_cases(
    const std::string& op, std::initializer_list<const char*> moved,
    const std::function<void(const Args&, const DropoutSite&)>& emulate) {
  const std::vector<OpCase> cases = op_cases();
  for (const size_t index : {size_t{3}, size_t{8}}) {
    const OpCase& c = cases.at(index);
    INFO(c.name());
    REQUIRE(c.op == op);
    REQUIRE(c.shape.rfind("300x", 0) == 0);
    if (index == 3) check_parity_names_moved(c, moved);
    check_emulation_within_bounds(c, index == 3 ? 0.0f : 0.1f, emulate);
  }
}

}  // namespace electra::test
