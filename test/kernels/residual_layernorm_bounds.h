// The parity checks shared by the fused ops that end in kernels/layernorm_quad.cuh's epilogue
// (ffn_forward_cases.cpp, output_layernorm_cases.cpp; ffn_backward_cases.cpp shares the list of
// cases and the benchmark's baseline): o = GEMM + b in bf16, sum =
// bf16(dropout(o) + residual), mean, rstd, y = LayerNorm(sum). Each output is judged element by
// element within a bound derived from the roundings the kernel does (bf16_bounds.h), against the
// exact function of what the GPU itself wrote before it: the checks run in spec order and record
// what they saw (`record`), so mean, rstd and y are judged against the statistics of the GPU's
// own sum. Judged against the reference's own chain instead, one bf16 rounding of sum would be
// multiplied by the LayerNorm's condition number.
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/dropout.h"
#include "test/common/op_case.h"
#include "test/kernels/bf16_bounds.h"

namespace electra::test {

// What the LayerNorm's checks read: its parameters as the GPU read them (recorded by the case's
// reference) and what the GPU wrote (recorded by the checks). H = 64 columns, eps = 1e-12.
struct LayerNormSeen {
  static constexpr int64_t kH = 64;
  static constexpr float kEps = 1e-12f;
  std::vector<double> gamma, beta;
  std::vector<double> keep_scale;  // dropout applied to ones: 1 / (1 - p) or 0 per element of sum
  std::vector<double> sum, mean, rstd;
};

inline std::vector<double> values_of(const Tensor& t) {
  return std::vector<double>(t.ptr<double>(), t.ptr<double>() + t.numel());
}

// The reference's part for n rows: gamma and beta as the GPU read them (the f64 reference's
// inputs), and the dropout of `site` applied to ones.
inline void record_layernorm_inputs(Context& ctx, const Args& a, const DropoutSite& site, int64_t n,
                                    LayerNormSeen& s) {
  s.gamma = values_of(a["gamma"]);
  s.beta = values_of(a["beta"]);
  std::vector<double> ones(n * LayerNormSeen::kH, 1.0);
  s.keep_scale.assign(ones.size(), 0.0);
  run_op(ctx, Dropout{.x = view(ones), .site = site, .y = Out(view(s.keep_scale))});
}

// `check`, recording what it saw in `field` of *seen for the checks that follow.
template <class Field, class Seen>
TensorSpec::Check record(Field field, std::shared_ptr<Seen> seen, TensorSpec::Check check) {
  return [field, seen, check](const std::vector<double>& got, const std::vector<double>& want,
                              double tol) {
    (*seen).*field = got;
    return check(got, want, tol);
  };
}

// sum = bf16(keep ? fl(bf16(fl(acc + b)) * scale) : 0) + residual) at row r, column c, for
// o = x W^T + b (x [., k], W [H, k], b [H] and the residual [., H] as the GPU read them; acc the
// f32 sum of the k exact products): acc is within 2 k u32 sum|x w| (bf16_bounds.h), the bias add
// rounds (u32 |o|), the bf16 rounding of o adds u |o|, the scale (f32, the reference's is exact)
// and the product round (2 u32 |o scale|), the add of the residual rounds (u32 |sum|) and the bf16
// store (u |sum|).
struct SumBound {
  double want, bound;
};
inline SumBound sum_bound(const LayerNormSeen& s, const std::vector<double>& x,
                          const std::vector<double>& w, const std::vector<double>& b,
                          const std::vector<double>& residual, int64_t k, int64_t r, int64_t c) {
  constexpr int64_t kH = LayerNormSeen::kH;
  double o = b[c], abs_o = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double term = x[r * k + i] * w[c * k + i];
    o += term;
    abs_o += std::abs(term);
  }
  const double keep_scale = s.keep_scale[r * kH + c];
  const double want = keep_scale * o + residual[r * kH + c];
  const double o_err =
      kBf16Roundoff * std::abs(o) + f32_accumulation_bound(abs_o, k) + kF32Roundoff * std::abs(o);
  return {want, keep_scale * o_err + 2 * kF32Roundoff * std::abs(keep_scale * o) +
                    (kBf16Roundoff + kF32Roundoff) * std::abs(want)};
}

// The dropout site of a case, dropout_site_offset(3) + shift (the models' sites are multiples of
// 4; the ops take any).
inline DropoutSite case_site(const Context& ctx, float p, uint64_t shift) {
  return DropoutSite{ctx.rng(RngPurpose::kDropout, 8), dropout_site_offset(3) + shift, p};
}

// The check of sum, recording it: `bound(r, c)` gives element (r, c)'s SumBound.
template <class Seen, class Bound>
TensorSpec::Check sum_check(std::shared_ptr<Seen> seen, Bound bound) {
  constexpr int64_t kH = LayerNormSeen::kH;
  return record(&LayerNormSeen::sum, seen,
                [bound](const std::vector<double>& got, const std::vector<double>&, double) {
                  std::vector<SumBound> b(got.size());
                  std::vector<double> want(got.size());
                  for (size_t i = 0; i < got.size(); ++i) {
                    b[i] = bound(static_cast<int64_t>(i) / kH, static_cast<int64_t>(i) % kH);
                    want[i] = b[i].want;
                  }
                  return over_bound(got, want, [&](size_t i) { return b[i].bound; });
                });
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
inline RowStats row_stats(const LayerNormSeen& s, int64_t r) {
  constexpr int64_t kH = LayerNormSeen::kH;
  double sum = 0, abs_sum = 0, sq = 0;
  for (int64_t c = 0; c < kH; ++c) {
    sum += s.sum[r * kH + c];
    abs_sum += std::abs(s.sum[r * kH + c]);
  }
  const double mean = sum / kH;
  for (int64_t c = 0; c < kH; ++c) sq += (s.sum[r * kH + c] - mean) * (s.sum[r * kH + c] - mean);
  const double var = sq / kH;
  const double mean_bound = kF32Roundoff * (abs_sum + std::abs(mean));
  const double var_rel =
      (kH + 3 + 1) * kF32Roundoff + mean_bound * mean_bound / (var + LayerNormSeen::kEps);
  return {mean, 1 / std::sqrt(var + LayerNormSeen::kEps), mean_bound,
          var_rel / 2 + 2 * kF32Roundoff};
}

// The checks of mean, rstd (recording them) and y, in that spec order after sum's.
struct LayerNormChecks {
  TensorSpec::Check mean, rstd, y;
};
inline LayerNormChecks layernorm_checks(std::shared_ptr<LayerNormSeen> seen) {
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
  // y = bf16(fl(fl(fl(s - mean') rstd') gamma) + beta): mean's error moves it by |gamma| rstd dm,
  // rstd's relative error by |gamma xhat| e_rstd, the three roundings inside by 3 u32 |gamma xhat|
  // (an FMA rounds less), the add by u32 |y|, the store by u |y|.
  const TensorSpec::Check y = [seen](const std::vector<double>& got, const std::vector<double>&,
                                     double) {
    constexpr int64_t kH = LayerNormSeen::kH;
    const LayerNormSeen& s = *seen;
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
  return {.mean = record(&LayerNormSeen::mean, seen, per_row([](const RowStats& st) {
            return std::pair{st.mean, st.mean_bound};
          })),
          .rstd = record(&LayerNormSeen::rstd, seen, per_row([](const RowStats& st) {
            return std::pair{st.rstd, st.rstd_rel * st.rstd};
          })),
          .y = y};
}

// A fused op's case at `shape` (n rows) and dropout p, for `modes`: `fused` the op, otherwise the
// unfused ops it replaces on the same tensors under the same checks; the dropout site is
// dropout_site_offset(3) + shift (the models' sites are multiples of 4; the op takes any).
using FusedCaseMaker = std::function<OpCase(const std::string& shape, int64_t n, float p,
                                            unsigned modes, bool fused, uint64_t shift)>;

// With kBench among c's modes: the benchmark of a fused op's case (dropout p) validated at 300
// rows (5 tiles, the last partial: the CPU reference at 16384 rows would take long), and so is
// the unfused baseline `baseline` timed on the benchmark's tensors; `flops` per row of the
// [rows, .] tensor `rows_of`.
inline void with_bench_baseline(OpCase& c, float p, const FusedCaseMaker& make,
                                const std::string& baseline, double flops, std::string rows_of) {
  if ((c.modes & kBench) == 0) return;
  c.bench_validation = [p, make] { return make("300", 300, p, kGpu, true, 0); };
  c.baseline_impl = baseline;
  c.baseline_case = [p, make] { return make("300", 300, p, kGpu, false, 0); };
  c.bench_flops = [flops, rows_of](const Args& a, bool) {
    return flops * static_cast<double>(a[rows_of].dim(0));
  };
}

// Completes `c` (op, shape, forward and reference set, its tensors up to the LayerNorm's: the
// inputs, gamma and beta among them; n rows, dropout p) as every such case is: the sublayer
// scratch and the checked outputs sum (by `sum`), mean, rstd and y (by layernorm_checks(seen)),
// appended in that order; bf16 only, against the f64 reference; with kBench, with_bench_baseline
// (`flops` per row of x).
inline OpCase fused_layernorm_case(OpCase c, int64_t n, float p,
                                   const std::shared_ptr<LayerNormSeen>& seen,
                                   const TensorSpec::Check& sum, const FusedCaseMaker& make,
                                   const std::string& baseline, double flops) {
  constexpr int64_t kH = LayerNormSeen::kH;
  const LayerNormChecks norm = layernorm_checks(seen);
  for (TensorSpec t :
       {workspace("sublayer", {n, kH}, Kind::kAct), output("sum", {n, kH}).checked(sum),
        output("mean", {n}, Kind::kParam).checked(norm.mean),
        output("rstd", {n}, Kind::kParam).checked(norm.rstd),
        output("y", {n, kH}).checked(norm.y)}) {
    c.tensors.push_back(t);
  }
  c.dtypes = {DType::BF16};
  c.tol_reason =
      "per-element bounds of bf16_bounds.h, each output against the exact function of the GPU's "
      "own earlier outputs";
  c.reference_f64 = true;
  with_bench_baseline(c, p, make, baseline, flops, "x");
  return c;
}

// The cases of such an op: 1 row, one full tile of 64 rows and partial tiles (100, 300) without
// dropout and with p = 0.1; the unfused sequence at 300 rows under the same checks (the bounds
// hold for the path the fused kernel replaces: the baseline's validation); dropout at site
// offsets that are not multiples of 4 (an element's Philox words straddle two blocks in places);
// and the benchmark at ELECTRA-Small's 16384 tokens (batch 128 x seq 128).
inline std::vector<OpCase> fused_layernorm_cases(const FusedCaseMaker& make) {
  std::vector<OpCase> cases;
  for (const float p : {0.0f, 0.1f}) {
    for (const int64_t n : {1, 64, 100, 300}) {
      cases.push_back(make(std::to_string(n), n, p, kGpu, true, 0));
    }
    cases.push_back(make("300", 300, p, kGpu, false, 0));
  }
  for (const uint64_t shift : {1, 2, 3}) {
    cases.push_back(make("100", 100, 0.1f, kGpu, true, shift));
  }
  cases.push_back(make("small_16384", 16384, 0.1f, kBench, true, 0));
  return cases;
}

}  // namespace electra::test
