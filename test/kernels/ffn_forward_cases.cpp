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
// act, mean and rstd against the statistics of the GPU's sum, y against the LayerNorm of it.
// Judged against the reference's own chain instead, one bf16 rounding of pre would be multiplied
// by GELU's and then LayerNorm's condition numbers (matmul_cases.cpp, bias_gelu).
#include <cmath>
#include <memory>
#include <tuple>
#include <utility>

#include "kernels/dropout.h"
#include "kernels/ffn_forward.h"
#include "kernels/matmul.h"
#include "test/common/op_case.h"
#include "test/kernels/bf16_bounds.h"

namespace electra::test {
namespace {

constexpr int64_t kH = 64, kF = 4 * kH;
constexpr float kEps = 1e-12f;

// The inputs as the GPU read them (from the f64 reference) and what the GPU wrote, recorded by
// the checks in spec order for the checks that follow.
struct Seen {
  std::vector<double> x, w1, b1, w2, b2, gamma, beta;
  std::vector<double> keep_scale;  // dropout applied to ones: 1 / (1 - p) or 0 per element of sum
  std::vector<double> abs_xw;      // |x| |W1|^T
  std::vector<double> pre, act, sum, mean, rstd;
};

std::vector<double> values_of(const Tensor& t) {
  return std::vector<double>(t.ptr<double>(), t.ptr<double>() + t.numel());
}

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

struct SumBound {
  double want, bound;
};

// sum = bf16(keep ? fl(bf16(fl(acc + b2)) * scale) : 0) + x) per element, acc the f32 sum of the
// F exact products act w2: acc is within 2 F u32 sum|act w2| (bf16_bounds.h), the bias add rounds
// (u32 |o|), the bf16 rounding of o adds u |o|, the scale (f32, the reference's is exact) and the
// product round (2 u32 |o scale|), the add of x rounds (u32 |sum|) and the bf16 store (u |sum|).
SumBound sum_bound(const Seen& s, int64_t r, int64_t c) {
  double o = s.b2[c], abs_o = 0;
  for (int64_t k = 0; k < kF; ++k) {
    const double term = s.act[r * kF + k] * s.w2[c * kF + k];
    o += term;
    abs_o += std::abs(term);
  }
  const double ks = s.keep_scale[r * kH + c];
  const double want = ks * o + s.x[r * kH + c];
  const double o_err =
      kBf16Roundoff * std::abs(o) + f32_accumulation_bound(abs_o, kF) + kF32Roundoff * std::abs(o);
  return {want, ks * o_err + 2 * kF32Roundoff * std::abs(ks * o) +
                    (kBf16Roundoff + kF32Roundoff) * std::abs(want)};
}

// The statistics of the GPU's sum row r in f64, and the bounds of the GPU's f32 ones: the mean
// sums H terms (each add within u32 of its result, |partial sums| <= sum|s|) and divides by H
// (exact) : H u32 sum|s| / H + u32 |mean|. The variance sums H squares of (s - mean') (each d
// rounded, squared and rounded: 3 u32 relative, then H adds): (H + 3) u32 relative; mean's error
// dm adds dm^2 / var relative (its first-order term is sum(s - mean) dm = 0); + eps rounds (u32),
// sqrtf and the division round (u32 each) and the square root halves the variance's error.
struct RowStats {
  double mean, rstd, mean_bound, rstd_rel;
};
RowStats row_stats(const Seen& s, int64_t r) {
  double sum = 0, abs_sum = 0, sq = 0;
  for (int64_t c = 0; c < kH; ++c) {
    sum += s.sum[r * kH + c];
    abs_sum += std::abs(s.sum[r * kH + c]);
  }
  const double mean = sum / kH;
  for (int64_t c = 0; c < kH; ++c) sq += (s.sum[r * kH + c] - mean) * (s.sum[r * kH + c] - mean);
  const double var = sq / kH;
  const double mean_bound = kF32Roundoff * (abs_sum + std::abs(mean));
  const double var_rel = (kH + 3 + 1) * kF32Roundoff + mean_bound * mean_bound / (var + kEps);
  return {mean, 1 / std::sqrt(var + kEps), mean_bound, var_rel / 2 + 2 * kF32Roundoff};
}

TensorSpec::Check record(std::vector<double> Seen::*field, std::shared_ptr<Seen> seen,
                         TensorSpec::Check check) {
  return [field, seen, check](const std::vector<double>& got, const std::vector<double>& want,
                              double tol) {
    (*seen).*field = got;
    return check(got, want, tol);
  };
}

OpCase ffn_case(const std::string& shape, int64_t n, float p, unsigned modes, bool fused = true,
                uint64_t shift = 0);

// `fused`: the op; otherwise the unfused ops of models/feed_forward.cpp's wide path (the
// benchmark's baseline), on the same tensors and judged by the same bounds. The dropout site is
// dropout_site_offset(3) + shift (the models' sites are multiples of 4; the op takes any).
OpCase ffn_case(const std::string& shape, int64_t n, float p, unsigned modes, bool fused,
                uint64_t shift) {
  auto seen = std::make_shared<Seen>();
  auto site = [p, shift](const Context& ctx) {
    return DropoutSite{ctx.rng(RngPurpose::kDropout, 8), dropout_site_offset(3) + shift, p};
  };
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
    s.gamma = values_of(a["gamma"]);
    s.beta = values_of(a["beta"]);
    std::vector<double> ones(n * kH, 1.0);
    s.keep_scale.assign(n * kH, 0.0);
    run_op(ctx, Dropout{.x = view(ones), .site = site(ctx), .y = Out(view(s.keep_scale))});
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
  const TensorSpec::Check sum_check = record(
      &Seen::sum, seen, [seen](const std::vector<double>& got, const std::vector<double>&, double) {
        std::vector<SumBound> b(got.size());
        std::vector<double> want(got.size());
        for (size_t i = 0; i < got.size(); ++i) {
          b[i] = sum_bound(*seen, static_cast<int64_t>(i) / kH, static_cast<int64_t>(i) % kH);
          want[i] = b[i].want;
        }
        return over_bound(got, want, [&](size_t i) { return b[i].bound; });
      });
  // A row statistic against row_stats: `pick` gives row r's (want, bound).
  auto per_row = [seen](auto pick) -> TensorSpec::Check {
    return [seen, pick](const std::vector<double>& got, const std::vector<double>&, double) {
      std::vector<double> want(got.size()), bound(got.size());
      for (size_t r = 0; r < got.size(); ++r) {
        std::tie(want[r], bound[r]) = pick(row_stats(*seen, static_cast<int64_t>(r)));
      }
      return over_bound(got, want, [&](size_t r) { return bound[r]; });
    };
  };
  const TensorSpec::Check mean_check = record(&Seen::mean, seen, per_row([](const RowStats& st) {
    return std::pair{st.mean, st.mean_bound};
  }));
  const TensorSpec::Check rstd_check = record(&Seen::rstd, seen, per_row([](const RowStats& st) {
    return std::pair{st.rstd, st.rstd_rel * st.rstd};
  }));
  // y = bf16(fl(fl(fl(s - mean') rstd') gamma) + beta): mean's error moves it by |gamma| rstd dm,
  // rstd's relative error by |gamma xhat| e_rstd, the three roundings inside by 3 u32 |gamma xhat|
  // (an FMA rounds less), the add by u32 |y|, the store by u |y|.
  const TensorSpec::Check y_check = [seen](const std::vector<double>& got,
                                           const std::vector<double>&, double) {
    const Seen& s = *seen;
    std::vector<double> want(got.size()), bound(got.size());
    for (int64_t r = 0; r < static_cast<int64_t>(got.size()) / kH; ++r) {
      const RowStats st = row_stats(s, r);
      for (int64_t c = 0; c < kH; ++c) {
        const double gx = s.gamma[c] * (s.sum[r * kH + c] - st.mean) * st.rstd;
        const size_t i = static_cast<size_t>(r * kH + c);
        want[i] = gx + s.beta[c];
        bound[i] = std::abs(s.gamma[c]) * st.rstd * st.mean_bound +
                   std::abs(gx) * (st.rstd_rel + 3 * kF32Roundoff) +
                   (kBf16Roundoff + kF32Roundoff) * std::abs(want[i]);
      }
    }
    return over_bound(got, want, [&](size_t i) { return bound[i]; });
  };

  OpCase c{
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
                  output("act", {n, kF}).checked(act_check),
                  workspace("sublayer", {n, kH}, Kind::kAct),
                  output("sum", {n, kH}).checked(sum_check),
                  output("mean", {n}, Kind::kParam).checked(mean_check),
                  output("rstd", {n}, Kind::kParam).checked(rstd_check),
                  output("y", {n, kH}).checked(y_check)},
      .forward = forward,
      .reference = reference,
      .modes = modes,
      .dtypes = {DType::BF16},
      .tol_reason =
          "per-element bounds of bf16_bounds.h, each output against the exact function "
          "of the GPU's own earlier outputs",
      .reference_f64 = true,
  };
  if ((modes & kBench) != 0) {
    // The CPU reference at 16384 rows would take long: validated at 300 rows (5 tiles, the last
    // partial), and so is the unfused baseline timed on the benchmark's tensors.
    c.bench_validation = [p] { return ffn_case("300", 300, p, kGpu); };
    c.baseline_impl = "unfused_4_launches";
    c.baseline_case = [p] { return ffn_case("300", 300, p, kGpu, false); };
    // 2 N H F FLOPs per GEMM.
    c.bench_flops = [](const Args& a, bool) {
      return 4.0 * static_cast<double>(a["x"].dim(0)) * kH * kF;
    };
  }
  return c;
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  for (const float p : {0.0f, 0.1f}) {
    cases.push_back(ffn_case("1", 1, p, kGpu));
    cases.push_back(ffn_case("64", 64, p, kGpu));
    cases.push_back(ffn_case("100", 100, p, kGpu));
    cases.push_back(ffn_case("300", 300, p, kGpu));
    // The unfused sequence under the same checks: the bounds hold for the path the fused kernel
    // replaces (the baseline's validation).
    cases.push_back(ffn_case("300", 300, p, kGpu, false));
  }
  // Dropout at a site offset that is not a multiple of 4 (an element's Philox words straddle two
  // blocks in places).
  for (const uint64_t shift : {1, 2, 3}) {
    cases.push_back(ffn_case("100", 100, 0.1f, kGpu, true, shift));
  }
  // ELECTRA-Small's generator: batch 128 x seq 128 tokens.
  cases.push_back(ffn_case("small_16384", 16384, 0.1f, kBench));
  return cases;
}

}  // namespace electra::test
