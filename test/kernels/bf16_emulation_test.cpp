// CPU emulations of the GPU kernels' roundings: each rounds to bf16 (engine/bf16.h) or computes in
// f32 exactly the intermediates the kernel does, on the data of its GPU test, and compares with
// the f64 reference, so that the error an algorithm should have is known without a GPU (the
// first H100 run: issue 30). The GEMMs accumulate in f32 in k order (cuBLASLt's order differs;
// that changes the result by a few f32 roundings, far below the bf16 ones measured here).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "engine/bf16.h"
#include "kernels/attention.h"
#include "kernels/disc_head.h"
#include "test/common/test_util.h"
#include "test/kernels/attention_errors.h"
#include "test/kernels/bf16_bounds.h"

using namespace electra;

namespace {

float round_bf16(float x) {
  return bf16_to_float(float_to_bf16(x));
}

std::vector<float> rounded_bf16(std::vector<float> v) {
  for (float& x : v) x = round_bf16(x);
  return v;
}

// ---- attention, version 1 (kernels/attention.cu), at p = 0 ----

struct AttentionShape {
  int64_t b, t, h, heads;
  int64_t d() const { return h / heads; }
};

// The unfused kernels' bf16 path: S = bf16(scale Q K^T), P = bf16(softmax in f32), then
// dPd = dout V^T (bf16, as before issue 30, or f32), dS = bf16(P (dPd - sum_k P_k dPd_k)) in f32,
// dQ = bf16(scale dS K), dK = bf16(scale dS^T Q). Returns dqkv with dV left 0 (not affected).
std::vector<float> emulate_unfused_backward(const std::vector<float>& qkv,
                                            const std::vector<float>& dout,
                                            const std::vector<int32_t>& mask,
                                            const AttentionShape& s, bool dpd_in_f32) {
  const int64_t t = s.t, h = s.h, d = s.d();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> dqkv(qkv.size(), 0.0f), p(t * t), ds(t * t), dpd(t);
  for (int64_t bi = 0; bi < s.b; ++bi) {
    for (int64_t hi = 0; hi < s.heads; ++hi) {
      // Element c of head hi of row i of part (0 Q, 1 K, 2 V) in qkv, dqkv or (part 0) dout.
      const auto at = [&](int64_t i, int part, int64_t c) {
        return (bi * t + i) * 3 * h + part * h + hi * d + c;
      };
      const auto dout_at = [&](int64_t i, int64_t c) { return (bi * t + i) * h + hi * d + c; };
      const int32_t* m = mask.data() + bi * t;
      for (int64_t i = 0; i < t; ++i) {
        float* row = p.data() + i * t;
        float max = -INFINITY;
        for (int64_t j = 0; j < t; ++j) {
          float acc = 0.0f;
          for (int64_t c = 0; c < d; ++c) acc += qkv[at(i, 0, c)] * qkv[at(j, 1, c)];
          row[j] = round_bf16(scale * acc);
          if (m[j] != 0) max = std::max(max, row[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < t; ++j) {
          if (m[j] != 0) sum += std::exp(row[j] - max);
        }
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        for (int64_t j = 0; j < t; ++j) {
          row[j] = m[j] != 0 ? round_bf16(std::exp(row[j] - max) * inv) : 0.0f;
        }
        float dot = 0.0f;
        for (int64_t j = 0; j < t; ++j) {
          float acc = 0.0f;
          for (int64_t c = 0; c < d; ++c) acc += dout[dout_at(i, c)] * qkv[at(j, 2, c)];
          dpd[j] = dpd_in_f32 ? acc : round_bf16(acc);
          dot += row[j] * dpd[j];
        }
        for (int64_t j = 0; j < t; ++j) ds[i * t + j] = round_bf16(row[j] * (dpd[j] - dot));
      }
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t c = 0; c < d; ++c) {
          float dq = 0.0f, dk = 0.0f;
          for (int64_t j = 0; j < t; ++j) {
            dq += ds[i * t + j] * qkv[at(j, 1, c)];
            dk += ds[j * t + i] * qkv[at(j, 0, c)];
          }
          dqkv[at(i, 0, c)] = round_bf16(scale * dq);
          dqkv[at(i, 1, c)] = round_bf16(scale * dk);
        }
      }
    }
  }
  return dqkv;
}

// ---- matmul's bias and GELU epilogue (kernels/matmul.cu), bf16 output ----

// f32 GELU as bias_gelu_kernel computes it.
float gelu_f32(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
}

}  // namespace

// The data of attention_gpu_test's ELECTRA-Small cases (8 x 128, H 256, 4 heads), p = 0:
// positive V and dout, so that dPd = dout V^T has a large common offset and the softmax
// backward's dPd - sum_k P_k dPd_k cancels. The H100 measured 2.89% / 2.66% (dQ / dK) with dPd in
// bf16; the bound is attention_gpu_test's bf16 tolerance, 2e-2 (attention_cases.cpp).
TEST_CASE("bf16 emulation: unfused attention backward needs dPd in f32", "[bf16_emulation]") {
  const AttentionShape s{8, 128, 256, 4};
  const int64_t b = s.b, t = s.t, h = s.h;
  std::vector<float> qkv = test::random_vector<float>(b * t * 3 * h, 91, -1, 1);
  const std::vector<float> v = test::random_vector<float>(b * t * h, 92, 0.1, 1);
  for (int64_t row = 0; row < b * t; ++row) {
    for (int64_t col = 0; col < h; ++col) qkv[row * 3 * h + 2 * h + col] = v[row * h + col];
  }
  qkv = rounded_bf16(qkv);
  const std::vector<float> dout = rounded_bf16(test::random_vector<float>(b * t * h, 93, 0.1, 1));
  std::vector<int32_t> mask(b * t, 1);
  for (int64_t bi = 1; bi < b; ++bi) {
    for (int64_t j = t - 1 - (bi * 13) % (t / 2); j < t; ++j) mask[bi * t + j] = 0;
  }

  Context cpu = Context::cpu();
  const AttentionArgs args{s.heads, 0.0f, RngStream{77, RngPurpose::kDropout, 5, 0}, 3};
  std::vector<double> hqkv(qkv.begin(), qkv.end()), hdout(dout.begin(), dout.end());
  std::vector<double> probs(b * s.heads * t * t), scratch(probs.size()), out(b * t * h);
  std::vector<double> ref(hqkv.size());
  run_op(cpu, AttentionForward{.qkv = test::view(hqkv, {b, t, 3 * h}),
                               .mask = test::view(mask, {b, t}),
                               .args = args,
                               .saved = Out(test::view(probs, {b, s.heads, t, t})),
                               .scratch = Out(test::view(scratch, {b, s.heads, t, t})),
                               .out = Out(test::view(out, {b, t, h}))});
  run_op(cpu, AttentionBackward{.qkv = test::view(hqkv, {b, t, 3 * h}),
                                .mask = test::view(mask, {b, t}),
                                .args = args,
                                .saved = test::view(probs, {b, s.heads, t, t}),
                                .dout = test::view(hdout, {b, t, h}),
                                .scratch = Out(test::view(scratch, {b, s.heads, t, t})),
                                .dqkv = Out(test::view(ref, {b, t, 3 * h}))});

  const double tol = 2e-2;
  const test::AttentionGradErrors old_way =
      test::attention_grad_errors(emulate_unfused_backward(qkv, dout, mask, s, false), ref, h);
  const test::AttentionGradErrors new_way =
      test::attention_grad_errors(emulate_unfused_backward(qkv, dout, mask, s, true), ref, h);
  INFO("dPd in bf16: dQ " << old_way.dq << ", dK " << old_way.dk << "; in f32: dQ " << new_way.dq
                          << ", dK " << new_way.dk);
  CHECK(old_way.dq > tol);  // the defect the H100 found is visible here
  CHECK(old_way.dk > tol);
  CHECK(new_way.dq < tol);
  CHECK(new_way.dk < tol);
}

// The data of matmul_gpu_test's bias + GELU case in bf16 (130 x 96, k 64, x W^T near 2.6, the
// bias near -4.5 or +0.5 by column). The pre-activation is rounded once (a bf16 bias, fused into
// the GEMM) or twice (GEMM output, then the epilogue's bias add: an f32 or unaligned bias); y =
// bf16(gelu_f32(pre)). Each is checked against its bound from bf16_bounds.h, as the GPU test does.
// Near pre = -2.8 GELU's relative condition number is about 7.7, so y against the GELU of the
// exact pre-activation is 2-3% off after a single bf16 rounding of pre: not a kernel error.
TEST_CASE("bf16 emulation: the bias + GELU epilogue is within its derived bounds",
          "[bf16_emulation]") {
  const int64_t m = 130, n = 96, k = 64;
  const std::vector<float> x = rounded_bf16(test::random_vector<float>(m * k, 4, 0.1, 0.3));
  const std::vector<float> w = rounded_bf16(test::random_vector<float>(n * k, 5, 0.1, 0.3));
  std::vector<float> bias = test::random_vector<float>(n + 1, 6, 0, 1);
  for (int64_t i = 0; i <= n; i += 2) bias[i] -= 5.0f;
  struct Variant {
    const char* name;
    bool bf16_bias, fused;
    int64_t skip;  // first bias element used (1: unaligned)
  };
  for (const Variant& variant : {Variant{"f32 bias, aligned", false, false, 0},
                                 Variant{"f32 bias, unaligned", false, false, 1},
                                 Variant{"bf16 bias, aligned (fused)", true, true, 0},
                                 Variant{"bf16 bias, unaligned", true, false, 1}}) {
    INFO(variant.name);
    const std::vector<float> b = variant.bf16_bias ? rounded_bf16(bias) : bias;
    double worst_pre = 0, worst_y = 0, old_metric = 0;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        float acc = 0.0f;
        double xw = 0;
        for (int64_t i = 0; i < k; ++i) {
          acc += x[r * k + i] * w[c * k + i];
          xw += static_cast<double>(x[r * k + i]) * w[c * k + i];
        }
        const float bc = b[c + variant.skip];
        const float pre = variant.fused ? round_bf16(acc + bc) : round_bf16(round_bf16(acc) + bc);
        const float y = round_bf16(gelu_f32(pre));
        const double exact_pre = xw + bc;
        // Positive inputs: |x| |W|^T = x W^T.
        const double pre_bound = test::bf16_gemm_bias_bound(xw, exact_pre, xw, k);
        worst_pre = std::max(worst_pre, std::abs(pre - exact_pre) / pre_bound);
        worst_y =
            std::max(worst_y, std::abs(y - test::gelu_exact(pre)) / test::bf16_gelu_bound(pre));
        // The old metric: y against the GELU of the exact pre-activation.
        const double want = test::gelu_exact(exact_pre);
        old_metric = std::max(old_metric, std::abs(y - want) / std::abs(want));
      }
    }
    INFO("pre: worst error / bound " << worst_pre << "; y: " << worst_y
                                     << "; y against gelu(exact pre): max relative error "
                                     << old_metric);
    CHECK(worst_pre <= 1);
    CHECK(worst_y <= 1);
    // The former check (y against the reference within 2e-2) fails here as on the H100, which
    // logged 3.24%, 3.25%, 2.10% and 2.07% for these four variants.
    CHECK(old_metric > 2e-2);
  }
}

// The data of disc_head_gpu_test (z uniform in (-6, 6), random labels). s - y from
// e = exp(-|z|) (disc_head.h) in f32 against f64 on the same logits: e within 1 ulp (2 u32), 1 + e
// within 2 u32 (e's error scaled by e / (1 + e) <= 1/2, then its rounding), the quotient u32,
// then w * scale and the product with it u32 each: 7 u32, checked against 8 u32. The former
// 1 / (1 + exp(-z)) - y cancels for y = 1 and large z (3e-5 here; 4.8e-5 on the H100).
TEST_CASE("bf16 emulation: disc_head's f32 dlogits are within a few ulps of f64",
          "[bf16_emulation]") {
  const int64_t n = 128 * 128 + 77;
  std::vector<float> z = test::random_vector<float>(n, 91, -6, 6);
  std::vector<int32_t> labels = test::random_ints(n, 92, 0, 1);
  std::vector<float> weights(n, 1.0f);
  const float scale = 1.0f / n;
  Context cpu = Context::cpu();
  // dlogits of the CPU op in the precision of `logits` (float or double).
  const auto dlogits = [&](auto logits) {
    using T = typename decltype(logits)::value_type;
    std::vector<T> loss(n), dz(n), counts(kDiscCounts);
    run_op(cpu, DiscHead{.logits = test::view(logits, {n}),
                         .labels = test::view(labels, {n}),
                         .weights = test::view(weights, {n}),
                         .scale = scale,
                         .loss = Out(test::view(loss, {n})),
                         .dlogits = Out(test::view(dz, {n})),
                         .counts = Out(test::view(counts, {kDiscCounts})),
                         .workspace = Out(Tensor{})});
    return dz;
  };
  const std::vector<float> dz = dlogits(z);
  const std::vector<double> dz64 = dlogits(std::vector<double>(z.begin(), z.end()));
  double worst_new = 0, worst_old = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-z[i]));
    const float old_dz = weights[i] * scale * (s - (labels[i] == 1 ? 1.0f : 0.0f));
    worst_new = std::max(worst_new, std::abs(dz[i] - dz64[i]) / std::abs(dz64[i]));
    worst_old = std::max(worst_old, std::abs(old_dz - dz64[i]) / std::abs(dz64[i]));
  }
  INFO("max relative error: s - y from e " << worst_new << ", 1 / (1 + exp(-z)) - y " << worst_old);
  CHECK(worst_new <= 8 * test::kF32Roundoff);
  CHECK(worst_old > 8 * test::kF32Roundoff);  // what the former formula gave
}
