// output_layernorm on the CPU (kernels/output_layernorm.h): the two unfused ops' bits, the shapes
// it refuses, its declared launch; and the parity checks of its harness cases
// (output_layernorm_cases.cpp), run here with the CPU standing in for the GPU: they pass the
// CPU's f32 result, pass a CPU emulation of the kernel's bf16 and f32 roundings (so that a bound
// that does not hold is found without a GPU), and name an output moved by a few bf16 roundings.
#include <catch2/catch.hpp>

#include "kernels/output_layernorm.h"
#include "test/kernels/residual_layernorm_emulation.h"

using namespace electra;
using namespace electra::test;

namespace {

constexpr int64_t kN = 70, kH = 64, kK = 64;

struct Tensors {
  std::vector<float> x = random_vector<float>(kN * kK, 1), w = random_vector<float>(kH * kK, 2),
                     b = random_vector<float>(kH, 3), residual = random_vector<float>(kN * kH, 4),
                     gamma = random_vector<float>(kH, 5), beta = random_vector<float>(kH, 6);
  std::vector<float> sublayer = std::vector<float>(kN * kH), sum = sublayer, y = sublayer,
                     mean = std::vector<float>(kN), rstd = mean;
};

OutputLayerNormForward op(Tensors& t, const DropoutSite& site) {
  return OutputLayerNormForward{.x = view(t.x, {kN, kK}),
                                .w = view(t.w, {kH, kK}),
                                .b = view(t.b),
                                .norm = {.x = view(t.sublayer, {kN, kH}),
                                         .residual = view(t.residual, {kN, kH}),
                                         .site = site,
                                         .gamma = view(t.gamma),
                                         .beta = view(t.beta),
                                         .eps = 1e-12f,
                                         .sum = Out(view(t.sum, {kN, kH})),
                                         .y = Out(view(t.y, {kN, kH})),
                                         .mean = Out(view(t.mean)),
                                         .rstd = Out(view(t.rstd))}};
}

// kernels/output_layernorm.cu's arithmetic on f32 tensors holding bf16 values: the GEMM's f32
// sum (in k order here, in the tensor cores' order there), o and sum rounded to bf16 where the
// kernel rounds them, the dropout bits, the LayerNorm's f32 statistics.
void emulate_kernel(const Args& a, const DropoutSite& site) {
  const float *x = a["x"].ptr<float>(), *w = a["w"].ptr<float>();
  for (int64_t r = 0; r < a["x"].dim(0); ++r) {
    emulate_epilogue(a, "b", "residual", site, r, [&](int64_t c) {
      float acc = 0;
      for (int64_t k = 0; k < kK; ++k) acc += x[r * kK + k] * w[c * kK + k];
      return acc;
    });
  }
}

}  // namespace

TEST_CASE("output_layernorm on the CPU gives the bits of its unfused ops", "[output_layernorm]") {
  Context ctx = Context::cpu(2);
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 8), dropout_site_offset(3), 0.1f};
  Tensors fused, unfused;
  run_op(ctx, op(fused, site));
  output_layernorm_unfused(ctx, op(unfused, site));
  CHECK(same_bits(fused.sublayer, unfused.sublayer));
  CHECK(same_bits(fused.sum, unfused.sum));
  CHECK(same_bits(fused.y, unfused.y));
  CHECK(same_bits(fused.mean, unfused.mean));
  CHECK(same_bits(fused.rstd, unfused.rstd));
  check_dropout_used(fused.sum, fused.residual);
}

TEST_CASE("output_layernorm refuses shapes the fused kernel does not take, and launches once",
          "[output_layernorm]") {
  CHECK(output_layernorm_supported(64, 64));
  CHECK_FALSE(output_layernorm_supported(64, 256));
  CHECK_FALSE(output_layernorm_supported(256, 256));
  Context ctx = Context::cpu(1);
  Tensors t;
  CHECK(op(t, DropoutSite{}).launches().kernels == 1);
  // K = 128: x [N, 128], w [64, 128].
  std::vector<float> x(kN * 128), w(kH * 128);
  OutputLayerNormForward wide = op(t, DropoutSite{});
  wide.x = view(x, {kN, 128});
  wide.w = view(w, {kH, 128});
  CHECK_THROWS_WITH(run_op(ctx, wide), Catch::Contains("H = 64, K = 128 is not supported"));
  std::vector<float> empty;
  OutputLayerNormForward none = op(t, DropoutSite{});
  none.x = Tensor::view_of(empty.data(), Device::CPU, {0, kK});
  CHECK(none.launches().kernels == 0);
}

TEST_CASE("output_layernorm's parity checks name a moved output and pass the kernel's emulation",
          "[output_layernorm]") {
  check_parity_cases("output_layernorm", {"sum", "y"}, emulate_kernel);
}
