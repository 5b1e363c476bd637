// ffn_backward on the CPU (kernels/ffn_backward.h): the bits of the four unfused ops as
// models/feed_forward.cpp runs them, the shapes and arguments it refuses, its declared launch; and
// the parity checks of its harness cases (ffn_backward_cases.cpp), run here with the CPU standing
// in for the GPU: they pass the CPU's f32 result, pass a CPU emulation of the kernel's bf16 and
// f32 roundings (so that a bound that does not hold is found without a GPU), and name an output
// moved by a few bf16 roundings.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/ffn_backward.h"
#include "kernels/gelu.h"
#include "kernels/matmul.h"
#include "test/kernels/residual_layernorm_emulation.h"

using namespace electra;
using namespace electra::test;

namespace {

constexpr int64_t kN = 70, kH = 64, kF = 256;

struct Tensors {
  std::vector<float> dy = random_vector<float>(kN * kH, 1), sum = random_vector<float>(kN * kH, 2),
                     gamma = random_vector<float>(kH, 3), mean = random_vector<float>(kN, 4),
                     rstd = random_vector<float>(kN, 5, 0.5f, 2.0f),
                     pre = random_vector<float>(kN * kF, 6), w1 = random_vector<float>(kF * kH, 7),
                     b1 = random_vector<float>(kF, 8), w2 = random_vector<float>(kH * kF, 9);
  std::vector<float> dgamma = random_vector<float>(kH, 10), dbeta = random_vector<float>(kH, 11),
                     db2 = random_vector<float>(kH, 12), db1 = random_vector<float>(kF, 13);
  std::vector<float> grad_output = std::vector<float>(kN * kH), dx = grad_output,
                     grad_act = std::vector<float>(kN * kF), grad_pre = grad_act;
};

FfnBackward op(Tensors& t, const DropoutSite& site) {
  return FfnBackward{.norm = {.dy = view(t.dy, {kN, kH}),
                              .sum = view(t.sum, {kN, kH}),
                              .gamma = view(t.gamma),
                              .mean = view(t.mean),
                              .rstd = view(t.rstd),
                              .site = site,
                              .dx = Out(view(t.grad_output, {kN, kH})),
                              .dresidual = Out(view(t.dx, {kN, kH})),
                              .dgamma = Out(view(t.dgamma)),
                              .dbeta = Out(view(t.dbeta)),
                              .dbias = Out(view(t.db2)),
                              .workspace = Out(Tensor{})},
                     .pre = view(t.pre, {kN, kF}),
                     .w1 = view(t.w1, {kF, kH}),
                     .b1 = view(t.b1),
                     .w2 = view(t.w2, {kH, kF}),
                     .grad_act = Out(view(t.grad_act, {kN, kF})),
                     .grad_pre = Out(view(t.grad_pre, {kN, kF})),
                     .db1 = Out(view(t.db1))};
}

// gelu'(u) as kernels/gelu_erfc.cuh evaluates it in f32 (no FMA: host code is built with
// -ffp-contract=off).
float gelu_grad_f32(float u) {
  const float cdf = 0.5f * std::erfc(-u * 0.70710678118654752f);
  return cdf + u * std::exp(-0.5f * u * u) * 0.39894228040143268f;
}

// kernels/ffn_backward.cu's arithmetic on f32 tensors holding bf16 values: the LayerNorm's row
// sums by the quad (lane q adds its columns 8 t + 2 q + e in order, then (q0 + q1) + (q2 + q3)),
// the dropout bits, each stored tensor rounded to bf16 where the kernel rounds it (grad_output, d,
// grad_act, grad_pre, dx), the GEMMs' f32 sums (in k order here, in the tensor cores' order there),
// erfcf and expf, the column sums of the f32 values in f32 (in row order here).
void emulate_kernel(const Args& a, const DropoutSite& site) {
  const int64_t n = a["dy"].dim(0);
  const float *dy = a["dy"].ptr<float>(), *sum = a["sum"].ptr<float>();
  const float *gamma = a["gamma"].ptr<float>(), *mean = a["mean"].ptr<float>();
  const float *rstd = a["rstd"].ptr<float>(), *pre = a["pre"].ptr<float>();
  const float *w1 = a["w1"].ptr<float>(), *b1 = a["b1"].ptr<float>(), *w2 = a["w2"].ptr<float>();
  float *grad_output = a["grad_output"].ptr<float>(), *grad_pre = a["grad_pre"].ptr<float>();
  float* dx = a["dx"].ptr<float>();
  const float scale = 1.0f / (1.0f - site.p);
  std::vector<float> dgamma(kH), dbeta(kH), db2(kH), db1(kF), d(kH);
  for (int64_t r = 0; r < n; ++r) {
    const float mu = mean[r], rs = rstd[r];
    const float *dyr = dy + r * kH, *xr = sum + r * kH;
    float sg[4] = {}, sgx[4] = {};
    for (int64_t t = 0; t < kH / 8; ++t) {
      for (int64_t q = 0; q < 4; ++q) {
        for (int64_t e = 0; e < 2; ++e) {
          const int64_t c = 8 * t + 2 * q + e;
          sg[q] += dyr[c] * gamma[c];
          sgx[q] += dyr[c] * gamma[c] * (xr[c] - mu) * rs;
        }
      }
    }
    const float mean_g = ((sg[0] + sg[1]) + (sg[2] + sg[3])) / kH;
    const float mean_gx = ((sgx[0] + sgx[1]) + (sgx[2] + sgx[3])) / kH;
    for (int64_t c = 0; c < kH; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      dgamma[c] += dyr[c] * (xr[c] - mu) * rs;
      dbeta[c] += dyr[c];
      const float v = rs * (dyr[c] * gamma[c] - mean_g - xhat * mean_gx);
      const float go =
          dropout_keep(site.stream, site.offset + r * kH + c, site.p) ? v * scale : 0.0f;
      db2[c] += go;
      grad_output[r * kH + c] = round_bf16(go);
      d[c] = round_bf16(v);
    }
    for (int64_t f = 0; f < kF; ++f) {
      float ga = 0;
      for (int64_t h = 0; h < kH; ++h) ga += grad_output[r * kH + h] * w2[h * kF + f];
      const float gp = round_bf16(ga) * gelu_grad_f32(pre[r * kF + f] + b1[f]);
      db1[f] += gp;
      grad_pre[r * kF + f] = round_bf16(gp);
    }
    for (int64_t c = 0; c < kH; ++c) {
      float acc = 0;
      for (int64_t f = 0; f < kF; ++f) acc += grad_pre[r * kF + f] * w1[f * kH + c];
      dx[r * kH + c] = round_bf16(acc + d[c]);
    }
  }
  for (const auto& [name, sums] :
       {std::pair{"dgamma", &dgamma}, {"dbeta", &dbeta}, {"db2", &db2}, {"db1", &db1}}) {
    float* dst = a[name].ptr<float>();
    for (size_t c = 0; c < sums->size(); ++c) dst[c] += (*sums)[c];
  }
}

}  // namespace

TEST_CASE("ffn_backward on the CPU gives the bits of the unfused ops", "[ffn_backward]") {
  Context ctx = Context::cpu(2);
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 8), dropout_site_offset(3), 0.1f};
  Tensors fused, unfused;
  run_op(ctx, op(fused, site));
  // models/feed_forward.cpp's wide path.
  const FfnBackward u = op(unfused, site);
  run_op(ctx, u.norm);
  matmul(ctx, u.norm.dx, false, u.w2, false, u.grad_act);
  run_op(ctx, BiasGeluBackward{.dy = u.grad_act,
                               .x = u.pre,
                               .b = u.b1,
                               .dx = Out(u.grad_pre),
                               .db = Out(u.db1),
                               .workspace = Out(Tensor{})});
  matmul(ctx, u.grad_pre, false, u.w1, false, u.norm.dresidual, 1, 1);
  CHECK(same_bits(fused.grad_output, unfused.grad_output));
  CHECK(same_bits(fused.grad_act, unfused.grad_act));
  CHECK(same_bits(fused.grad_pre, unfused.grad_pre));
  CHECK(same_bits(fused.dx, unfused.dx));
  CHECK(same_bits(fused.dgamma, unfused.dgamma));
  CHECK(same_bits(fused.dbeta, unfused.dbeta));
  CHECK(same_bits(fused.db2, unfused.db2));
  CHECK(same_bits(fused.db1, unfused.db1));
  // The dropout is applied: about 10% of grad_output is exactly 0.
  int64_t dropped = 0;
  for (const float v : fused.grad_output) dropped += v == 0.0f;
  CHECK(dropped > kN * kH / 20);
  CHECK(dropped < kN * kH / 5);
}

TEST_CASE("ffn_backward refuses shapes the fused kernel does not take, and launches once",
          "[ffn_backward]") {
  Context ctx = Context::cpu(1);
  Tensors t;
  CHECK(op(t, DropoutSite{}).launches().kernels == 1);
  // F = 128: grad_output W2 is [N, 128].
  std::vector<float> w1(128 * kH), b1(128), w2(kH * 128), pre(kN * 128), act(kN * 128);
  FfnBackward narrow = op(t, DropoutSite{});
  narrow.w1 = view(w1, {128, kH});
  narrow.b1 = view(b1);
  narrow.db1 = Out(view(b1));
  narrow.w2 = view(w2, {kH, 128});
  narrow.pre = view(pre, {kN, 128});
  narrow.grad_act = Out(view(act, {kN, 128}));
  narrow.grad_pre = Out(view(act, {kN, 128}));
  CHECK_THROWS_WITH(run_op(ctx, narrow), Catch::Contains("H = 64, F = 128 is not supported"));
  // The output linear's bias gradient is part of the op.
  FfnBackward no_bias = op(t, DropoutSite{});
  no_bias.norm.dbias = Out(Tensor{});
  CHECK_THROWS_WITH(run_op(ctx, no_bias), Catch::Contains("norm.dbias"));
  std::vector<float> empty;
  FfnBackward none = op(t, DropoutSite{});
  none.norm.sum = Tensor::view_of(empty.data(), Device::CPU, {0, kH});
  CHECK(none.launches().kernels == 0);
}

TEST_CASE("ffn_backward's parity checks name a moved output and pass the kernel's emulation",
          "[ffn_backward]") {
  // A moved grad_output moves the grad_pre judged against it: a later output may fail too.
  check_parity_cases("ffn_backward", {"grad_output", "grad_pre", "dx"}, emulate_kernel);
}
