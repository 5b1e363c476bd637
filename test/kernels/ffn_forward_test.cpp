// ffn_forward on the CPU (kernels/ffn_forward.h): the four unfused ops' bits, the shapes it
// refuses, its declared launch; and the parity checks of its harness cases
// (ffn_forward_cases.cpp), run here with the CPU standing in for the GPU: they pass the CPU's f32
// result, pass a CPU emulation of the kernel's bf16 and f32 roundings (so that a bound that does
// not hold is found without a GPU), and name an output moved by a few bf16 roundings.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "engine/bf16.h"
#include "kernels/dropout_mask.h"
#include "kernels/ffn_forward.h"
#include "test/common/op_case.h"
#include "test/common/test_util.h"

using namespace electra;
using namespace electra::test;

namespace {

constexpr int64_t kN = 70, kH = 64, kF = 256;

struct Tensors {
  std::vector<float> x = random_vector<float>(kN * kH, 1), w1 = random_vector<float>(kF * kH, 2),
                     b1 = random_vector<float>(kF, 3), w2 = random_vector<float>(kH * kF, 4),
                     b2 = random_vector<float>(kH, 5), gamma = random_vector<float>(kH, 6),
                     beta = random_vector<float>(kH, 7);
  std::vector<float> pre = std::vector<float>(kN * kF), act = pre,
                     sublayer = std::vector<float>(kN * kH), sum = sublayer, y = sublayer,
                     mean = std::vector<float>(kN), rstd = mean;
};

FfnForward op(Tensors& t, const DropoutSite& site) {
  return FfnForward{.x = view(t.x, {kN, kH}),
                    .w1 = view(t.w1, {kF, kH}),
                    .b1 = view(t.b1),
                    .w2 = view(t.w2, {kH, kF}),
                    .b2 = view(t.b2),
                    .site = site,
                    .gamma = view(t.gamma),
                    .beta = view(t.beta),
                    .eps = 1e-12f,
                    .pre = Out(view(t.pre, {kN, kF})),
                    .act = Out(view(t.act, {kN, kF})),
                    .sublayer = Out(view(t.sublayer, {kN, kH})),
                    .sum = Out(view(t.sum, {kN, kH})),
                    .y = Out(view(t.y, {kN, kH})),
                    .mean = Out(view(t.mean)),
                    .rstd = Out(view(t.rstd))};
}

float round_bf16(float v) {
  return bf16_to_float(float_to_bf16(v));
}

// kernels/ffn_forward.cu's arithmetic on f32 tensors holding bf16 values: the GEMMs' f32 sums
// (in k order here, in the tensor cores' order there), each stored tensor rounded to bf16 where
// the kernel rounds it, erfcf, the dropout bits, the LayerNorm's f32 statistics.
void emulate_kernel(const Args& a, const DropoutSite& site) {
  const int64_t n = a["x"].dim(0);
  const float *x = a["x"].ptr<float>(), *w1 = a["w1"].ptr<float>(), *b1 = a["b1"].ptr<float>();
  const float *w2 = a["w2"].ptr<float>(), *b2 = a["b2"].ptr<float>();
  const float *gamma = a["gamma"].ptr<float>(), *beta = a["beta"].ptr<float>();
  float *pre = a["pre"].ptr<float>(), *act = a["act"].ptr<float>(), *sum = a["sum"].ptr<float>();
  float *y = a["y"].ptr<float>(), *mean = a["mean"].ptr<float>(), *rstd = a["rstd"].ptr<float>();
  const float scale = 1.0f / (1.0f - site.p);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t f = 0; f < kF; ++f) {
      float acc = 0;
      for (int64_t k = 0; k < kH; ++k) acc += x[r * kH + k] * w1[f * kH + k];
      pre[r * kF + f] = round_bf16(acc);
      const float u = pre[r * kF + f] + b1[f];
      act[r * kF + f] = round_bf16(u * (0.5f * std::erfc(-u * 0.70710678118654752f)));
    }
    float total = 0;
    for (int64_t c = 0; c < kH; ++c) {
      float acc = 0;
      for (int64_t k = 0; k < kF; ++k) acc += act[r * kF + k] * w2[c * kF + k];
      const float o = round_bf16(acc + b2[c]);
      const bool keep = dropout_keep(site.stream, site.offset + r * kH + c, site.p);
      sum[r * kH + c] = round_bf16((keep ? o * scale : 0.0f) + x[r * kH + c]);
      total += sum[r * kH + c];
    }
    const float mu = total / kH;
    float sq = 0;
    for (int64_t c = 0; c < kH; ++c) sq += (sum[r * kH + c] - mu) * (sum[r * kH + c] - mu);
    const float rs = 1.0f / std::sqrt(sq / kH + 1e-12f);
    for (int64_t c = 0; c < kH; ++c) {
      y[r * kH + c] = round_bf16((sum[r * kH + c] - mu) * rs * gamma[c] + beta[c]);
    }
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// `c` with the inputs the GPU reads in bf16 made exact in bf16, so that an f32 run (the CPU
// standing in for the GPU) and its reference read the values a bf16 run would.
OpCase with_bf16_inputs(OpCase c) {
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

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("ffn_forward on the CPU gives the bits of its unfused ops", "[ffn_forward]") {
  Context ctx = Context::cpu(2);
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 8), dropout_site_offset(3), 0.1f};
  Tensors fused, unfused;
  run_op(ctx, op(fused, site));
  ffn_forward_unfused(ctx, op(unfused, site));
  CHECK(same_bits(fused.pre, unfused.pre));
  CHECK(same_bits(fused.act, unfused.act));
  CHECK(same_bits(fused.sum, unfused.sum));
  CHECK(same_bits(fused.y, unfused.y));
  CHECK(same_bits(fused.mean, unfused.mean));
  CHECK(same_bits(fused.rstd, unfused.rstd));
  // The site is used: about 10% of sum is x alone (0 + x, exact).
  int dropped = 0;
  for (int64_t i = 0; i < kN * kH; ++i) dropped += fused.sum[i] == fused.x[i];
  CHECK(dropped > kN * kH / 20);
  CHECK(dropped < kN * kH / 5);
}

TEST_CASE("ffn_forward refuses shapes the fused kernel does not take, and launches once",
          "[ffn_forward]") {
  CHECK(ffn_forward_supported(64, 256));
  CHECK_FALSE(ffn_forward_supported(64, 128));
  CHECK_FALSE(ffn_forward_supported(256, 1024));
  Context ctx = Context::cpu(1);
  Tensors t;
  CHECK(op(t, DropoutSite{}).launches().kernels == 1);
  // F = 128: x W1^T is [N, 128].
  std::vector<float> w1(128 * kH), b1(128), w2(kH * 128), pre(kN * 128), act(kN * 128);
  FfnForward narrow = op(t, DropoutSite{});
  narrow.w1 = view(w1, {128, kH});
  narrow.b1 = view(b1);
  narrow.w2 = view(w2, {kH, 128});
  narrow.pre = Out(view(pre, {kN, 128}));
  narrow.act = Out(view(act, {kN, 128}));
  CHECK_THROWS_WITH(run_op(ctx, narrow), Catch::Contains("H = 64, F = 128 is not supported"));
  std::vector<float> empty;
  FfnForward none = op(t, DropoutSite{});
  none.x = Tensor::view_of(empty.data(), Device::CPU, {0, kH});
  CHECK(none.launches().kernels == 0);
}

TEST_CASE("ffn_forward's parity checks pass a correct result and name a moved output",
          "[ffn_forward]") {
  const std::vector<OpCase> cases = op_cases();
  const OpCase& c = cases.at(3);  // ffn_forward/300, p = 0
  REQUIRE(c.op == "ffn_forward");
  REQUIRE(c.shape.rfind("300x", 0) == 0);
  Context device = Context::cpu(c.seed);
  // The CPU in f32 is within the bf16 bounds (its errors are those of f32 alone).
  CHECK(parity(c, DType::F32, device).empty());
  // Each output moved by 4 bf16 roundings at one element fails the check of that output, the
  // first failure (the checks run in spec order; the outputs after it, judged against what was
  // written, may fail too: the unmoved act is not gelu of the moved pre).
  for (const char* name : {"pre", "act", "sum", "y"}) {
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

TEST_CASE("ffn_forward's parity bounds hold for an emulation of the kernel's roundings",
          "[ffn_forward]") {
  const std::vector<OpCase> cases = op_cases();
  for (const size_t index : {size_t{3}, size_t{8}}) {  // ffn_forward/300 with p = 0 and 0.1
    OpCase c = with_bf16_inputs(cases.at(index));
    REQUIRE(c.op == "ffn_forward");
    REQUIRE(c.shape.rfind("300x", 0) == 0);
    const float p = index == 3 ? 0.0f : 0.1f;
    c.forward = [p](Context& ctx, const Args& a) {
      emulate_kernel(a, DropoutSite{ctx.rng(RngPurpose::kDropout, 8), dropout_site_offset(3), p});
    };
    Context device = Context::cpu(c.seed);
    const std::vector<std::string> failures = parity(c, DType::F32, device);
    for (const std::string& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
  }
}
