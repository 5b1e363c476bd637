// ffn_backward (kernels/ffn_backward.h) for the op harness (test/common/op_case.h).
//
// Gradient check (f64, 3 rows): the FFN block's forward (FfnForward, on the CPU the unfused ops)
// with FfnBackward as its backward, so that the composed op's dx, dgamma, dbeta, db2 and db1 are
// checked against central differences of the block's loss.
//
// GPU parity of the fused kernel (bf16 only) at H = 64, F = 256 (ELECTRA-Small's generator) for
// a single row, one full tile of 64 rows and partial tiles (100, 300 rows), without dropout and
// with p = 0.1, at site offsets that are not multiples of 4, and the benchmark at 16384 rows
// against the unfused sequence (residual LayerNorm backward, cuBLASLt dX GEMM, bias-GELU backward,
// accumulating cuBLASLt dX GEMM), which is validated by the same checks
// (residual_layernorm_bounds.h's fused_layernorm_cases). The inputs are independent fills (dy,
// the saved sum, mean, rstd and pre as the forward would have left them in range, not in value):
// the backward is a function of them whatever they are.
//
// Each output is judged element by element within a bound derived from the roundings the kernel
// does (test/kernels/bf16_bounds.h; every bound first order, like bf16_bounds.h's), against the
// exact function of the inputs and of what the GPU itself wrote before it (the checks run in spec
// order and record what they saw): grad_output against the exact LayerNorm and dropout backward of
// the inputs; grad_pre against (the GPU's grad_output W2) gelu'(pre + b1); dx against the exact
// LayerNorm backward plus the GPU's grad_pre W1; dgamma, dbeta against the exact column sums of
// the inputs; db2 and db1 against the column sums of the GPU's grad_output and grad_pre.
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>

#include "kernels/ffn_backward.h"
#include "test/kernels/residual_layernorm_bounds.h"

namespace electra::test {
namespace {

constexpr int64_t kH = LayerNormSeen::kH, kF = 4 * kH;
constexpr double kU = kBf16Roundoff, kU32 = kF32Roundoff;

// The inputs as the GPU read them (from the f64 reference), the accumulated outputs' starting
// values, and what the GPU wrote (recorded by the checks in spec order).
struct Seen {
  std::vector<double> dy, sum, gamma, mean, rstd, pre, w1, b1, w2;
  std::vector<double> keep_scale;  // dropout applied to ones: 1 / (1 - p) or 0 per element
  std::vector<double> dgamma0, dbeta0, db20, db10;
  std::vector<double> grad_output, grad_pre;
};

// A bound that may be 0 (an element the dropout zeroes must be exactly 0): over_bound divides by
// it, so 0 becomes the smallest positive double.
double exact_or(double bound) {
  return std::max(bound, std::numeric_limits<double>::denorm_min());
}

// The LayerNorm backward of row r in f64 from the inputs (mean and rstd as given, not those of
// sum: the kernel reads them), and the bound of the GPU's f32 d (kernels/layernorm.cu's
// expressions, which the fused kernel repeats):
//   xhat = (s - mean) rstd, g = dy gamma, mean_g = sum g / H, mean_gx = sum g xhat / H,
//   d = rstd (g - mean_g - xhat mean_gx).
// mean_g: H products (u32 each) and H - 1 adds (each within u32 of a partial sum <= A_g =
// sum |g|), in any order, then / H (exact): u32 A_g. mean_gx: each term 4 roundings (dy gamma,
// s - mean, the product, times rstd) and H - 1 adds: (H + 3) u32 A_gx / H, A_gx = sum |g xhat|.
// The element: dy gamma (u32 |g|), xhat (2 u32) times mean_gx (u32): 3 u32 |xhat mean_gx| plus
// |xhat| err(mean_gx); the two subtractions u32 each of their results; times rstd u32 |d|. An
// FMA contraction rounds less.
struct LnRow {
  double d[kH], err[kH];
};
LnRow ln_backward(const Seen& s, int64_t r) {
  const double mu = s.mean[r], rs = s.rstd[r];
  double xhat[kH], g[kH], sum_g = 0, sum_gx = 0, abs_g = 0, abs_gx = 0;
  for (int64_t c = 0; c < kH; ++c) {
    xhat[c] = (s.sum[r * kH + c] - mu) * rs;
    g[c] = s.dy[r * kH + c] * s.gamma[c];
    sum_g += g[c];
    sum_gx += g[c] * xhat[c];
    abs_g += std::abs(g[c]);
    abs_gx += std::abs(g[c] * xhat[c]);
  }
  const double mean_g = sum_g / kH, mean_gx = sum_gx / kH;
  const double err_mean_g = kU32 * abs_g, err_mean_gx = (kH + 3) * kU32 * abs_gx / kH;
  LnRow row;
  for (int64_t c = 0; c < kH; ++c) {
    const double inner = g[c] - mean_g - xhat[c] * mean_gx;
    row.d[c] = rs * inner;
    row.err[c] = rs * (kU32 * std::abs(g[c]) + err_mean_g + std::abs(xhat[c]) * err_mean_gx +
                       3 * kU32 * std::abs(xhat[c] * mean_gx) +
                       kU32 * (std::abs(g[c] - mean_g) + std::abs(inner))) +
                 kU32 * std::abs(row.d[c]);
  }
  return row;
}

// gelu'(u) = Phi(u) + u phi(u) exactly, and the bound of the GPU's f32 value from v = fl(pre +
// b1) (kernels/gelu_erfc.cuh): v moves it by max |gelu''| u32 |u| <= 0.8 u32 |u| (gelu'' =
// phi(u) (2 - u^2)); Phi = 0.5 erfcf(-v c) is within u32 (10 + 2 u^2 + 2.2 |u|) relative
// (ffn_forward_cases.cpp's derivation, which also covers a product more); u phi(u): -0.5 v v
// rounds once (u32 u^2 / 2 absolute in the exponent, as much relative in exp), expf within 2 ulp
// (4 u32), the products by v and by the rounded 1 / sqrt(2 pi) 3 u32: u32 (8 + u^2 / 2) relative;
// the sum rounds u32 |gelu'|.
struct GeluGrad {
  double value, err;
};
GeluGrad gelu_grad(double u) {
  const double cdf = 0.5 * std::erfc(-u / std::numbers::sqrt2);
  const double term = u * std::exp(-0.5 * u * u) / std::sqrt(2 * std::numbers::pi);
  const double value = cdf + term;
  return {value, kU32 * (0.8 * std::abs(u) + (10 + 2 * u * u + 2.2 * std::abs(u)) * cdf +
                         (8 + u * u / 2) * std::abs(term) + std::abs(value))};
}

// The check of a column sum dst[c] += sum over rows of term(r, c): want = the starting value plus
// the exact sum; each term within term_err(r, c) of what the kernel adds, and the N - 1 adds of any
// order within u32 of a partial sum <= sum |terms|, the final += within u32 |want|.
template <class Term>
TensorSpec::Check column_sum_check(std::shared_ptr<Seen> seen, std::vector<double> Seen::*start,
                                   int64_t cols, Term term) {
  return [seen, start, cols, term](const std::vector<double>& got, const std::vector<double>&,
                                   double) {
    const Seen& s = *seen;
    const auto n = static_cast<int64_t>(s.mean.size());
    std::vector<double> want(cols), bound(cols);
    for (int64_t c = 0; c < cols; ++c) {
      double total = 0, abs_total = 0, err = 0;
      for (int64_t r = 0; r < n; ++r) {
        const auto [value, value_err] = term(r, c);
        total += value;
        abs_total += std::abs(value);
        err += value_err;
      }
      want[c] = (s.*start)[c] + total;
      bound[c] = exact_or(err + n * kU32 * abs_total + kU32 * std::abs(want[c]));
    }
    return over_bound(got, want, [&](size_t c) { return bound[c]; });
  };
}

// The op on a case's tensors (names as the cases list them), dropout at `site`.
FfnBackward backward_op(const Args& a, const DropoutSite& site) {
  return FfnBackward{.norm = {.dy = a["dy"],
                              .sum = a["sum"],
                              .gamma = a["gamma"],
                              .mean = a["mean"],
                              .rstd = a["rstd"],
                              .site = site,
                              .dx = Out(a["grad_output"]),
                              .dresidual = Out(a["dx"]),
                              .dgamma = Out(a["dgamma"]),
                              .dbeta = Out(a["dbeta"]),
                              .dbias = Out(a["db2"]),
                              .workspace = Out(a["workspace"])},
                     .pre = a["pre"],
                     .w1 = a["w1"],
                     .b1 = a["b1"],
                     .w2 = a["w2"],
                     .grad_act = Out(a["grad_act"]),
                     .grad_pre = Out(a["grad_pre"]),
                     .db1 = Out(a["db1"])};
}

// `fused`: the op; otherwise the unfused ops of models/feed_forward.cpp's wide path (the
// benchmark's baseline), on the same tensors and judged by the same bounds.
OpCase ffn_backward_case(const std::string& shape, int64_t n, float p, unsigned modes, bool fused,
                         uint64_t shift) {
  auto seen = std::make_shared<Seen>();
  auto site = [p, shift](const Context& ctx) { return case_site(ctx, p, shift); };
  const Run forward = [site, fused](Context& ctx, const Args& a) {
    const FfnBackward op = backward_op(a, site(ctx));
    if (fused) {
      run_op(ctx, op);
    } else {
      ffn_backward_unfused(ctx, op);
    }
  };
  const Run reference = [forward, site, seen, n](Context& ctx, const Args& a) {
    Seen& s = *seen;
    for (auto [field, name] : {std::pair{&Seen::dy, "dy"},
                               {&Seen::sum, "sum"},
                               {&Seen::gamma, "gamma"},
                               {&Seen::mean, "mean"},
                               {&Seen::rstd, "rstd"},
                               {&Seen::pre, "pre"},
                               {&Seen::w1, "w1"},
                               {&Seen::b1, "b1"},
                               {&Seen::w2, "w2"},
                               {&Seen::dgamma0, "dgamma"},
                               {&Seen::dbeta0, "dbeta"},
                               {&Seen::db20, "db2"},
                               {&Seen::db10, "db1"}}) {
      s.*field = values_of(a[name]);
    }
    std::vector<double> ones(n * kH, 1.0);
    s.keep_scale.assign(ones.size(), 0.0);
    run_op(ctx, Dropout{.x = view(ones), .site = site(ctx), .y = Out(view(s.keep_scale))});
    forward(ctx, a);
  };

  // grad_output = bf16(keep ? fl(d fl(1 / (1 - p))) : 0): d's error, the scale's and the
  // product's roundings (2 u32), the store (u).
  const TensorSpec::Check grad_output_check = record(
      &Seen::grad_output, seen,
      [seen](const std::vector<double>& got, const std::vector<double>&, double) {
        const Seen& s = *seen;
        std::vector<double> want(got.size()), bound(got.size());
        for (int64_t r = 0; r < static_cast<int64_t>(got.size()) / kH; ++r) {
          const LnRow row = ln_backward(s, r);
          for (int64_t c = 0; c < kH; ++c) {
            const size_t i = static_cast<size_t>(r * kH + c);
            want[i] = s.keep_scale[i] * row.d[c];
            bound[i] = exact_or(s.keep_scale[i] * (row.err[c] + 2 * kU32 * std::abs(row.d[c])) +
                                kU * std::abs(want[i]));
          }
        }
        return over_bound(got, want, [&](size_t i) { return bound[i]; });
      });
  // grad_pre = bf16(fl(bf16(ga) gelu'(pre + b1))) with ga the f32 GEMM sum of the GPU's
  // grad_output times W2: ga within 2 H u32 sum |go w2| (bf16_bounds.h) and its bf16 rounding
  // u |ga|, times gelu' (within its bound), the product's rounding and the store (u32 + u).
  const TensorSpec::Check grad_pre_check = record(
      &Seen::grad_pre, seen,
      [seen](const std::vector<double>& got, const std::vector<double>&, double) {
        const Seen& s = *seen;
        std::vector<double> want(got.size()), bound(got.size());
        for (size_t i = 0; i < got.size(); ++i) {
          const size_t r = i / kF, f = i % kF;
          double ga = 0, abs_ga = 0;
          for (size_t h = 0; h < kH; ++h) {
            const double term = s.grad_output[r * kH + h] * s.w2[h * kF + f];
            ga += term;
            abs_ga += std::abs(term);
          }
          const GeluGrad gg = gelu_grad(s.pre[i] + s.b1[f]);
          want[i] = ga * gg.value;
          bound[i] = exact_or(std::abs(gg.value) * gemm_bound(ga, abs_ga, kH, kU) +
                              std::abs(ga) * (1 + kU) * gg.err + (kU32 + kU) * std::abs(want[i]));
        }
        return over_bound(got, want, [&](size_t i) { return bound[i]; });
      });
  // dx = bf16(fl(acc + bf16(d))) with acc the f32 GEMM sum of the GPU's grad_pre times W1: d's
  // error and its bf16 rounding (u |d|), acc's accumulation (2 F u32 sum |gp w1|), the add and
  // the store (u32 + u).
  const TensorSpec::Check dx_check = [seen](const std::vector<double>& got,
                                            const std::vector<double>&, double) {
    const Seen& s = *seen;
    std::vector<double> want(got.size()), bound(got.size());
    for (int64_t r = 0; r < static_cast<int64_t>(got.size()) / kH; ++r) {
      const LnRow row = ln_backward(s, r);
      for (int64_t c = 0; c < kH; ++c) {
        double acc = 0, abs_acc = 0;
        for (int64_t f = 0; f < kF; ++f) {
          const double term = s.grad_pre[r * kF + f] * s.w1[f * kH + c];
          acc += term;
          abs_acc += std::abs(term);
        }
        const size_t i = static_cast<size_t>(r * kH + c);
        want[i] = row.d[c] + acc;
        bound[i] = exact_or(row.err[c] + kU * std::abs(row.d[c]) +
                            f32_accumulation_bound(abs_acc, kF) + (kU32 + kU) * std::abs(want[i]));
      }
    }
    return over_bound(got, want, [&](size_t i) { return bound[i]; });
  };
  // dgamma's terms dy (s - mean) rstd: 3 roundings each. dbeta's: dy, exact. db2's and db1's: the
  // f32 values the GPU rounded to bf16 when it stored them, within u of the stored ones.
  const TensorSpec::Check dgamma_check =
      column_sum_check(seen, &Seen::dgamma0, kH, [seen](int64_t r, int64_t c) {
        const Seen& s = *seen;
        const double t = s.dy[r * kH + c] * (s.sum[r * kH + c] - s.mean[r]) * s.rstd[r];
        return std::pair{t, 3 * kU32 * std::abs(t)};
      });
  const TensorSpec::Check dbeta_check =
      column_sum_check(seen, &Seen::dbeta0, kH, [seen](int64_t r, int64_t c) {
        return std::pair{seen->dy[r * kH + c], 0.0};
      });
  const TensorSpec::Check db2_check =
      column_sum_check(seen, &Seen::db20, kH, [seen](int64_t r, int64_t c) {
        const double go = seen->grad_output[r * kH + c];
        return std::pair{go, kU * std::abs(go)};
      });
  const TensorSpec::Check db1_check =
      column_sum_check(seen, &Seen::db10, kF, [seen](int64_t r, int64_t f) {
        const double gp = seen->grad_pre[r * kF + f];
        return std::pair{gp, kU * std::abs(gp)};
      });

  OpCase c{
      .op = fused ? "ffn_backward" : "ffn_backward_unfused",
      .shape =
          str_cat(shape, "x", kH, "x", kF, "_p", p, shift != 0 ? str_cat("_shift", shift) : ""),
      // dy of about +-1, a saved sum of about +-2 with its statistics in range, pre-activations
      // of about +-1 plus b1 in [-1, 1]: both sides of GELU; W1 and W2 as the forward's cases.
      .tensors = {input("dy", {n, kH}), input("sum", {n, kH}, {.lo = -2, .hi = 2}),
                  param("gamma", {kH}, {.lo = 0.5, .hi = 1.5}),
                  param("mean", {n}, {.lo = -0.2, .hi = 0.2}),
                  param("rstd", {n}, {.lo = 0.5, .hi = 2}), input("pre", {n, kF}),
                  input("w1", {kF, kH}, {.lo = -0.2, .hi = 0.2}), param("b1", {kF}),
                  input("w2", {kH, kF}, {.lo = -0.1, .hi = 0.1}),
                  output("grad_output", {n, kH}).checked(grad_output_check),
                  output("grad_pre", {n, kF}).checked(grad_pre_check),
                  output("dx", {n, kH}).checked(dx_check),
                  updated("dgamma", {kH}).checked(dgamma_check),
                  updated("dbeta", {kH}).checked(dbeta_check),
                  updated("db2", {kH}).checked(db2_check), updated("db1", {kF}).checked(db1_check),
                  workspace("grad_act", {n, kF}, Kind::kAct),
                  workspace("workspace", ffn_backward_workspace_floats(n, kH, kF))},
      .forward = forward,
      .reference = reference,
      .modes = modes,
      .dtypes = {DType::BF16},
      .tol_reason =
          "per-element bounds of bf16_bounds.h, each output against the exact function "
          "of the inputs and of the GPU's own earlier outputs",
      .reference_f64 = true,
  };
  // 2 N H F FLOPs per GEMM.
  with_bench_baseline(c, p, ffn_backward_case, "unfused_4_launches", 4.0 * kH * kF, "dy");
  return c;
}

// The gradient check of the composed op: FfnForward (the unfused ops on the CPU) and FfnBackward
// as its backward, the loss dy . y, at 3 rows with dropout.
OpCase gradcheck_case() {
  constexpr int64_t n = 3;
  auto site = [](const Context& ctx) { return case_site(ctx, 0.1f, 0); };
  return OpCase{
      .op = "ffn_backward",
      .shape = str_cat(n, "x", kH, "x", kF, "_p0.1_block"),
      .tensors = {input("x", {n, kH}),
                  input("w1", {kF, kH}, {.lo = -0.2, .hi = 0.2}),
                  param("b1", {kF}),
                  input("w2", {kH, kF}, {.lo = -0.1, .hi = 0.1}),
                  input("b2", {kH}, {.lo = -0.5, .hi = 0.5}),
                  param("gamma", {kH}, {.lo = 0.5, .hi = 1.5}),
                  param("beta", {kH}),
                  output("pre", {n, kF}),
                  output("act", {n, kF}),
                  workspace("sublayer", {n, kH}, Kind::kAct),
                  output("sum", {n, kH}),
                  output("y", {n, kH}),
                  output("mean", {n}, Kind::kParam),
                  output("rstd", {n}, Kind::kParam),
                  upstream("dy", "y", {n, kH}),
                  grad("dx", "x", {n, kH}),
                  grad_acc("dgamma", "gamma", {kH}),
                  grad_acc("dbeta", "beta", {kH}),
                  grad_acc("db2", "b2", {kH}),
                  grad_acc("db1", "b1", {kF}),
                  workspace("grad_output", {n, kH}, Kind::kAct),
                  workspace("grad_pre", {n, kF}, Kind::kAct),
                  workspace("grad_act", {n, kF}, Kind::kAct),
                  workspace("workspace", ffn_backward_workspace_floats(n, kH, kF))},
      .forward =
          [site](Context& ctx, const Args& a) {
            run_op(ctx, FfnForward{.x = a["x"],
                                   .w1 = a["w1"],
                                   .b1 = a["b1"],
                                   .w2 = a["w2"],
                                   .b2 = a["b2"],
                                   .site = site(ctx),
                                   .gamma = a["gamma"],
                                   .beta = a["beta"],
                                   .eps = LayerNormSeen::kEps,
                                   .pre = Out(a["pre"]),
                                   .act = Out(a["act"]),
                                   .sublayer = Out(a["sublayer"]),
                                   .sum = Out(a["sum"]),
                                   .y = Out(a["y"]),
                                   .mean = Out(a["mean"]),
                                   .rstd = Out(a["rstd"])});
          },
      .backward = [site](Context& ctx, const Args& a) { run_op(ctx, backward_op(a, site(ctx))); },
      .modes = kGradcheck,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases = fused_layernorm_cases(ffn_backward_case);
  cases.push_back(gradcheck_case());
  return cases;
}

}  // namespace electra::test
