// ffn_forward (kernels/ffn_forward.h) for the op harness (test/common/op_case.h): GPU parity of
// the fused kernel (bf16 only) against the CPU reference in f64 on the inputs as the GPU reads
// them, at H = 64, F = 256 (ELECTRA-Small's generator), for a single row, one full tile of 64 rows,
// and partial tiles (100, 300 rows), without dropout and with p = 0.1; and the benchmark at 16384
// rows against the unfused sequence (cuBLASLt GEMM, bias-GELU, GEMM with its bias epilogue,
// residual LayerNorm), which is validated by the same checks. The CPU side of the op is the
// unfused ops themselves (kernels/ffn_forward_cpu.cpp), so it has no gradient check of its own:
// its backward is theirs, checked in gelu_cases, matmul_cases and layernorm_cases.
//
// Each output is judged element by element within a bound derived from the roundings the kernel
// does (test/kernels/bf16_bounds.h), against the exact function of what the GPU itself wrote
// before it (the checks run in spec order and record what they saw): pre against x W1^T, act
// against gelu(pre + b1) of the GPU's pre, sum against dropout(act W2^T + b2) + x of the GPU's
// act, mean, rstd and y against the LayerNorm of the GPU's sum (residual_layernorm_bounds.h).
// Judged against the reference's own chain instead, one bf16 rounding of pre would be multiplied
// by GELU's and then LayerNorm's condition numbers (matmul_cases.cpp, bias_gelu).
#include <cmath>
#include <memory>

#include "kernels/ffn_forward.h"
#include "kernels/matmul.h"
#include "test/kernels/residual_layernorm_bounds.h"

namespace electra::test {
namespace {

constexpr int64_t kH = LayerNormSeen::kH, kF = 4 * kH;
constexpr float kEps = LayerNormSeen::kEps;

// The inputs as the GPU read them (from the f64 reference) and what the GPU wrote, recorded by
// the checks in spec order for the checks that follow.
struct Seen : LayerNormSeen {
  std::vector<double> x, w1, b1, w2, b2;
  std::vector<double> abs_xw;  // |x| |W1|^T
  std::vector<double> pre, act;
};

// |act - gelu(u)| for u = pre + b1 (exact), where the GPU computes v = fl(pre + b1) in f32 and
// act = bf16(v (0.5 erfcf(-v c))), c = fl(1 / sqrt 2) (kernels/gelu.cu's form):
//   v = u (1 + e), |e| <= u32, moves gelu by |gelu'| u32 |u| <= 1.13 u32 |u| (max gelu' = 1.129);
//   -v c is within 2 u32 of -v / sqrt 2 = -t; erfc there moves relatively by
//   (2 / sqrt pi) e^(-t^2) 2 u32 |t| / erfc(-t): at most u32 for t >= 0 (erfc(-t) >= 1,
//   t e^(-t^2) <= 0.43), and for t < 0, with erfc(|t|) >= (2 / sqrt pi) e^(-t^2) / (|t| +
//   sqrt(t^2 + 2)), at most 2 u32 |t| (2 |t| + sqrt 2) <= u32 (4 t^2 + 3 |t|) = u32 (2 u^2 + 2.2
//   |u|); erfcf itself is within 4 ulp (CUDA's documented bound) <= 8 u32; 0.5 x is exact; the
//   product by v rounds once (u32). So delta = u32 (10 + 2 u^2 + 2.2 |u|) relative to gelu(v), and
//   the bf16 rounding adds u (1 + delta) relative.
double gpu_gelu_bound(double u) {
  const double delta = kF32Roundoff * (10 + 2 * u * u + 2.2 * std::abs(u));
  return std::abs(gelu_exact(u)) * (kBf16Roundoff * (1 + delta) + delta) +
         1.13 * kF32Roundoff * std::abs(u);
}

// `fused`: the op; otherwise the unfused ops of models/feed_forward.cpp's wide path (the
// benchmark's baseline), on the same tensors and judged by the same bounds (FusedCaseMaker).
OpCase ffn_case(const std::string& shape, int64_t n, float p, unsigned modes, bool fused,
                uint64_t shift) {
  auto seen = std::make_shared<Seen>();
  auto site = [p, shift](const Context& ctx) { return case_site(ctx, p, shift); };
  const Run forward = [site, fused](Context& ctx, const Args& a) {
    const FfnForward op{.x = a["x"],
                        .w1 = a["w1"],
                        .b1 = a["b1"],
                        .w2 = a["w2"],
                        .b2 = a["b2"],
                        .site = site(ctx),
                        .gamma = a["gamma"],
                        .beta = a["beta"],
                        .eps = kEps,
                        .pre = Out(a["pre"]),
                        .act = Out(a["act"]),
                        .sublayer = Out(a["sublayer"]),
                        .sum = Out(a["sum"]),
                        .y = Out(a["y"]),
                        .mean = Out(a["mean"]),
                        .rstd = Out(a["rstd"])};
    if (fused) {
      run_op(ctx, op);
    } else {
      ffn_forward_unfused(ctx, op);
    }
  };
  const Run reference = [forward, site, seen, n](Context& ctx, const Args& a) {
    forward(ctx, a);
    Seen& s = *seen;
    s.x = values_of(a["x"]);
    s.w1 = values_of(a["w1"]);
    s.b1 = values_of(a["b1"]);
    s.w2 = values_of(a["w2"]);
    s.b2 = values_of(a["b2"]);
    record_layernorm_inputs(ctx, a, site(ctx), n, s);
    std::vector<double> abs_x = s.x, abs_w1 = s.w1;
    for (double& v : abs_x) v = std::abs(v);
    for (double& v : abs_w1) v = std::abs(v);
    s.abs_xw.assign(n * kF, 0.0);
    matmul(ctx, view(abs_x, {n, kH}), false, view(abs_w1, {kF, kH}), true, view(s.abs_xw, {n, kF}));
  };

  // pre = bf16(x W1^T): one rounding and the f32 accumulation over H.
  const TensorSpec::Check pre_check =
      record(&Seen::pre, seen,
             [seen](const std::vector<double>& got, const std::vector<double>& want, double) {
               return over_bound(got, want, [&](size_t i) {
                 return gemm_bound(want[i], seen->abs_xw[i], kH, kBf16Roundoff);
               });
             });
  const TensorSpec::Check act_check = record(
      &Seen::act, seen, [seen](const std::vector<double>& got, const std::vector<double>&, double) {
        const Seen& s = *seen;
        std::vector<double> want(got.size());
        for (size_t i = 0; i < got.size(); ++i) want[i] = gelu_exact(s.pre[i] + s.b1[i % kF]);
        return over_bound(got, want,
                          [&](size_t i) { return gpu_gelu_bound(s.pre[i] + s.b1[i % kF]); });
      });
  const TensorSpec::Check sum = sum_check(seen, [seen](int64_t r, int64_t c) {
    const Seen& s = *seen;
    return sum_bound(s, s.act, s.w2, s.b2, s.x, kF, r, c);
  });

  const OpCase c{
      .op = fused ? "ffn_forward" : "ffn_forward_unfused",
      .shape =
          str_cat(shape, "x", kH, "x", kF, "_p", p, shift != 0 ? str_cat("_shift", shift) : ""),
      // Pre-activations of about +-1 (64 terms of x in [-1, 1] times W1 in [-0.2, 0.2]) plus b1
      // in [-1, 1]: both sides of GELU; o of about +-0.5 next to x.
      .tensors = {input("x", {n, kH}), input("w1", {kF, kH}, {.lo = -0.2, .hi = 0.2}),
                  param("b1", {kF}), input("w2", {kH, kF}, {.lo = -0.1, .hi = 0.1}),
                  input("b2", {kH}, {.lo = -0.5, .hi = 0.5}),
                  param("gamma", {kH}, {.lo = 0.5, .hi = 1.5}), param("beta", {kH}),
                  output("pre", {n, kF}).checked(pre_check),
                  output("act", {n, kF}).checked(act_check)},
      .forward = forward,
      .reference = reference,
      .modes = modes,
  };
  // 2 N H F FLOPs per GEMM.
  return fused_layernorm_case(c, n, p, seen, sum, ffn_case, "unfused_4_launches", 4.0 * kH * kF);
}

}  // namespace

std::vector<OpCase> op_cases() {
  return fused_layernorm_cases(ffn_case);
}

}  // namespace electra::test
