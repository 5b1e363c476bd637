// ffn_forward on the CPU (kernels/ffn_forward.h): the four unfused ops' bits, the shapes it
// refuses, its declared launch; and the parity checks of its harness cases
// (ffn_forward_cases.cpp), run here with the CPU standing in for the GPU: they pass the CPU's f32
// result, pass a CPU emulation of the kernel's bf16 and f32 roundings (so that a bound that does
// not hold is found without a GPU), and name an output moved by a few bf16 roundings.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/ffn_forward.h"
#include "test/kernels/residual_layernorm_emulation.h"

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

// kernels/ffn_forward.cu's arithmetic on f32 tensors holding bf16 values: the GEMMs' f32 sums
// (in k order here, in the tensor cores' order there), each stored tensor rounded to bf16 where
// the kernel rounds it, erfcf, the dropout bits, the LayerNorm's f32 statistics.
void emulate_kernel(const Args& a, const DropoutSite& site) {
  const int64_t n = a["x"].dim(0);
  const float *x = a["x"].ptr<float>(), *w1 = a["w1"].ptr<float>(), *b1 = a["b1"].ptr<float>();
  const float* w2 = a["w2"].ptr<float>();
  float *pre = a["pre"].ptr<float>(), *act = a["act"].ptr<float>();
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t f = 0; f < kF; ++f) {
      float acc = 0;
      for (int64_t k = 0; k < kH; ++k) acc += x[r * kH + k] * w1[f * kH + k];
      pre[r * kF + f] = round_bf16(acc);
      const float u = pre[r * kF + f] + b1[f];
      act[r * kF + f] = round_bf16(u * (0.5f * std::erfc(-u * 0.70710678118654752f)));
    }
    emulate_epilogue(a, "b2", "x", site, r, [&](int64_t c) {
      float acc = 0;
      for (int64_t k = 0; k < kF; ++k) acc += act[r * kF + k] * w2[c * kF + k];
      return acc;
    });
  }
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
  check_dropout_used(fused.sum, fused.x);
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

TEST_CASE("ffn_forward's parity checks name a moved output and pass the kernel's emulation",
          "[ffn_forward]") {
  // The unmoved act is not gelu of a moved pre: a later output may fail too.
  check_parity_cases("ffn_forward", {"pre", "act", "sum", "y"}, emulate_kernel);
}
