// matmul (kernels/matmul.h: Gemm through matmul / matmul_batched / linear_forward, its bias and
// GELU epilogues, BiasGrad) for the op harness (test/common/op_case.h): gradient checks of every
// transpose combination with a bias, of strided padded batches and of linear_forward /
// linear_backward; GPU parity against the CPU reference in f64 on the inputs as the GPU reads them
// (f32 with TF32 off, bf16) for every transpose combination at beta 0 and 1, the epilogues with an
// f32 or activation-dtype bias, aligned (fused by cuBLASLt) or not, attention-like batches, the
// encoder's batched weight gradients (dW += dY^T X at a parameter stride), and BiasGrad from one
// column over 100000 rows to 1000 columns, alone and in groups (the encoder's QKV biases). Hand
// values, the FMA order and refusals: matmul_test.cpp; the benchmark's raw cuBLASLt baselines:
// bench/matmul_bench.cu.
#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <tuple>

#include "engine/bf16.h"
#include "kernels/matmul.h"
#include "test/common/op_case.h"
#include "test/kernels/bf16_bounds.h"

namespace electra::test {
namespace {

// A tensor the case reads through MatrixBatch views of their own layout (the contract check's
// longer storage still holds them: matmul checks the views' bounds, not the storage's shape).
constexpr const char* kView = "MatrixBatch views of their own layout into it";

// Against the f64 reference on the same (rounded) inputs, relative, element by element: positive
// A and B make every output a sum of positive terms (no cancellation), so the error is the
// kernel's. f32: TF32 off, each of the k <= 64 f32 additions within one ulp (2 u32, a tensor core
// may truncate): 2 k u32 <= 7.6e-6 < 1e-5. bf16: the output rounded once (2^-8) plus that.
constexpr Tol kGemmTol = {1e-5, 2e-2};
const char* const kGemmTolReason =
    "f32: k f32 additions of positive terms, 2 k u32 < 1e-5; bf16: one output rounding 2^-8 "
    "plus that";
// A function, not a global: the harness calls op_cases() from another file's static constructor.
Fill positive() {
  return {.lo = 0.1, .hi = 1};
}

// op(X) is X or X^T: the stored dims of an operand whose op is rows x cols.
std::vector<int64_t> stored(bool trans, int64_t rows, int64_t cols) {
  return trans ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{rows, cols};
}

std::string transposes(bool ta, bool tb) {
  return std::string(ta ? "T" : "N") + (tb ? "T" : "N");
}

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  float alpha = 1, beta = 0;
  bool bias = false;
};

// The backward of C = alpha op(A) op(B) (+ bias) as the layers write it: dop(A) = alpha dC op(B)^T,
// dop(B) = alpha op(A)^T dC, a transposed operand taking the transpose, and dbias += colsum(dC).
Run gemm_backward(const GemmShape& g) {
  return [g](Context& ctx, const Args& a) {
    if (g.ta) {
      matmul(ctx, a["b"], g.tb, a["dc"], true, a["da"], g.alpha);
    } else {
      matmul(ctx, a["dc"], false, a["b"], !g.tb, a["da"], g.alpha);
    }
    if (g.tb) {
      matmul(ctx, a["dc"], true, a["a"], g.ta, a["db"], g.alpha);
    } else {
      matmul(ctx, a["a"], !g.ta, a["dc"], false, a["db"], g.alpha);
    }
    if (g.bias) run_op(ctx, BiasGrad{.dy = a["dc"], .db = Out(a["dbias"])});
  };
}

// C = alpha op(A) op(B) + beta C (+ bias); the gradient check (beta 0: C written) with
// gemm_backward.
OpCase gemm(const GemmShape& g, unsigned modes) {
  ELECTRA_CHECK(g.beta == 0 || (modes & kGradcheck) == 0,
                "matmul case: the gradient check reruns the forward, so C must be written");
  std::vector<TensorSpec> tensors = {input("a", stored(g.ta, g.m, g.k), positive()),
                                     input("b", stored(g.tb, g.k, g.n), positive())};
  if (g.bias) tensors.push_back(param("bias", {g.n}));
  tensors.push_back(g.beta == 0 ? output("c", {g.m, g.n}).relative(kGemmTol)
                                : updated("c", {g.m, g.n}, {}, Kind::kAct).relative(kGemmTol));
  const bool backward = (modes & kGradcheck) != 0;
  if (backward) {
    for (TensorSpec t : {upstream("dc", "c", {g.m, g.n}), grad("da", "a", stored(g.ta, g.m, g.k)),
                         grad("db", "b", stored(g.tb, g.k, g.n))}) {
      tensors.push_back(std::move(t));
    }
    if (g.bias) tensors.push_back(grad_acc("dbias", "bias", {g.n}));
  }
  return OpCase{
      .op = "matmul",
      .shape = str_cat(g.m, "x", g.n, "x", g.k, "_", transposes(g.ta, g.tb),
                       g.beta != 0 ? "_beta1" : "", g.bias ? "_bias" : ""),
      .tensors = std::move(tensors),
      .forward =
          [g](Context& ctx, const Args& a) {
            matmul(ctx, a["a"], g.ta, a["b"], g.tb, a["c"], g.alpha, g.beta,
                   MatmulEpilogue{g.bias ? &a["bias"] : nullptr, nullptr});
          },
      .backward = backward ? gemm_backward(g) : Run{},
      .modes = modes,
      .tol = kGemmTol,
      .tol_reason = kGemmTolReason,
      .reference_f64 = true,
  };
}

// A check of each element against the reference within bound(want, i).
TensorSpec::Check within(std::function<double(const std::vector<double>& want, size_t i)> bound) {
  return [bound](const std::vector<double>& got, const std::vector<double>& want, double) {
    return over_bound(got, want, [&](size_t i) { return bound(want, i); });
  };
}

// The bias and GELU epilogues of y = x W^T + b as linear_forward and the FFN's first linear call
// them: y_bias with the bias alone, then pre = x W^T + b and y = gelu(pre). x W^T is about 2.6
// (64 positive terms near 0.04); the bias puts every other column near -2 and the rest near +3:
// both GELU branches, no value close to zero. `bias_kind` kParam is an f32 bias, kAct the
// output's dtype; an unaligned bias (one element into its tensor) takes the unfused path.
//   f32: every output relative to the f64 reference (kGemmTol).
//   bf16: element by element within the bounds of test/kernels/bf16_bounds.h: y_bias and pre
//   against the reference, y against the exact GELU of the pre the GPU wrote. y against the
//   reference GELU would multiply pre's rounding by GELU's relative condition number
//   |x gelu'(x) / gelu(x)|, about 7.7 near x = -2.8: 2-3% from one bf16 rounding (the first
//   H100 run).
OpCase bias_gelu(DType dtype, Kind bias_kind, bool aligned) {
  const int64_t m = 130, n = 96, k = 64;
  // Exact in bf16, so that the bias the GPU reads is these values in either dtype, and x W^T of
  // an element is its reference pre minus its column's bias.
  std::vector<double> bias = random_vector<double>(n + 1, 6, 0, 1);
  for (size_t i = 0; i < bias.size(); ++i) {
    bias[i] = bf16_to_float(float_to_bf16(static_cast<float>(bias[i] - (i % 2 == 0 ? 5 : 0))));
  }
  const int64_t skip = aligned ? 0 : 1;
  const TensorSpec::Check pre_check =
      within([bias, n, k, skip](const std::vector<double>& want, size_t i) {
        const double xw = want[i] - bias[skip + static_cast<int64_t>(i) % n];
        return bf16_gemm_bias_bound(xw, want[i], xw, k);
      });
  // y's bound needs the pre the GPU wrote: the parity run compares the tensors in spec order, so
  // "pre" (before "y") leaves it here.
  auto got_pre = std::make_shared<std::vector<double>>();
  const TensorSpec::Check record_pre = [pre_check, got_pre](const std::vector<double>& got,
                                                            const std::vector<double>& want,
                                                            double tol) {
    *got_pre = got;
    return pre_check(got, want, tol);
  };
  const TensorSpec::Check gelu_check = [got_pre](const std::vector<double>& got,
                                                 const std::vector<double>&, double) {
    if (got_pre->size() != got.size()) return std::string("pre was not compared before y");
    std::vector<double> gelu_of_got(got.size());
    for (size_t i = 0; i < got.size(); ++i) gelu_of_got[i] = gelu_exact((*got_pre)[i]);
    return over_bound(got, gelu_of_got, [&](size_t i) { return bf16_gelu_bound((*got_pre)[i]); });
  };
  const bool bf16 = dtype == DType::BF16;
  auto judged = [&](TensorSpec s, const TensorSpec::Check& check) {
    return bf16 ? s.checked(check) : s.relative(kGemmTol);
  };
  return OpCase{
      .op = "matmul",
      .shape =
          str_cat(m, "x", n, "x", k, "_NT_bias_gelu_", bias_kind == Kind::kParam ? "f32" : "act",
                  "bias_", aligned ? "aligned" : "unaligned"),
      .tensors = {input("x", {m, k}, {.lo = 0.1, .hi = 0.3}),
                  input("w", {n, k}, {.lo = 0.1, .hi = 0.3}),
                  input("bias", {n + 1}, fixed(bias), bias_kind)
                      .any_shape("the case passes n elements of it"),
                  judged(output("y_bias", {m, n}), pre_check),
                  judged(output("pre", {m, n}), record_pre),
                  judged(output("y", {m, n}), gelu_check)},
      .forward =
          [n, skip](Context& ctx, const Args& a) {
            const Tensor bias_n = a["bias"].rows(skip, skip + n);
            matmul(ctx, a["x"], false, a["w"], true, a["y_bias"], 1, 0, {&bias_n, nullptr});
            matmul(ctx, a["x"], false, a["w"], true, a["y"], 1, 0, {&bias_n, &a["pre"]});
          },
      .modes = kGpu,
      .dtypes = {dtype},
      .tol = kGemmTol,
      .tol_reason = bf16 ? "per-element bounds of bf16_bounds.h" : kGemmTolReason,
      .reference_f64 = true,
  };
}

// Attention-like batches: a head of A [37, 32] inside rows of 3 * 64 at column 32, B^T likewise
// at column 96, C [37, 37] dense, scaled by 1/8.
OpCase batched_attention_like() {
  const int64_t batch = 6, m = 37, n = 37, k = 32, ld = 192, size = batch * m * ld;
  return OpCase{
      .op = "matmul_batched",
      .shape = "6x37x37x32_ld192",
      .tensors = {input("qkv", {size}, positive()).any_shape(kView),
                  output("s", {batch * m * n}).relative(kGemmTol).any_shape(kView)},
      .forward =
          [=](Context& ctx, const Args& a) {
            const MatrixBatch q{a["qkv"], 32, m, k, ld, m * ld};
            const MatrixBatch kk{a["qkv"], 64 + 32, n, k, ld, m * ld};
            matmul_batched(ctx, q, false, kk, true, MatrixBatch{a["s"], 0, m, n, n, m * n}, batch,
                           0.125f, 0);
          },
      .modes = kGpu,
      .tol = kGemmTol,
      .tol_reason = kGemmTolReason,
      .reference_f64 = true,
  };
}

// C_i = A_i^T B_i with A^T stored [k, m] at ld m + 1, B [k, n] at ld n + 2 after an offset of 2,
// C [m, n] dense: dA_i = B_i dC_i^T ([k, m]), dB_i = A_i dC_i ([k, n]); the padding's gradient
// stays 0 (the harness's written gradients start at 0 on the CPU).
OpCase batched_strided() {
  const int64_t batch = 3, m = 4, n = 5, k = 3;
  const int64_t a_size = batch * k * (m + 1), b_size = 2 + batch * k * (n + 2);
  auto layouts = [=](const Tensor& a, const Tensor& b) {
    return std::pair{MatrixBatch{a, 0, k, m, m + 1, k * (m + 1)},
                     MatrixBatch{b, 2, k, n, n + 2, k * (n + 2)}};
  };
  auto dense = [=](const Tensor& c) { return MatrixBatch{c, 0, m, n, n, m * n}; };
  return OpCase{
      .op = "matmul_batched",
      .shape = "3x4x5x3_strided",
      .tensors = {input("a", {a_size}).any_shape(kView), input("b", {b_size}).any_shape(kView),
                  output("c", {batch * m * n}).any_shape(kView),
                  upstream("dc", "c", {batch * m * n}).any_shape(kView),
                  grad("da", "a", {a_size}).any_shape(kView),
                  grad("db", "b", {b_size}).any_shape(kView)},
      .forward =
          [=](Context& ctx, const Args& a) {
            const auto [ma, mb] = layouts(a["a"], a["b"]);
            matmul_batched(ctx, ma, true, mb, false, dense(a["c"]), batch);
          },
      .backward =
          [=](Context& ctx, const Args& a) {
            const auto [ma, mb] = layouts(a["a"], a["b"]);
            const auto [mda, mdb] = layouts(a["da"], a["db"]);
            matmul_batched(ctx, mb, false, dense(a["dc"]), true, mda, batch);
            matmul_batched(ctx, ma, false, dense(a["dc"]), false, mdb, batch);
          },
      .modes = kGradcheck,
  };
}

// y = x W^T + b over a rank-3 x; dx written, dW and db accumulated (linear_backward).
OpCase linear() {
  const int64_t in = 5, out = 4;
  return OpCase{
      .op = "linear",
      .shape = "2x3x5_to_4",
      .tensors = {input("x", {2, 3, in}), param("w", {out, in}), param("b", {out}),
                  output("y", {2, 3, out}), upstream("dy", "y", {2, 3, out}),
                  grad("dx", "x", {2, 3, in}), grad_acc("dw", "w", {out, in}),
                  grad_acc("db", "b", {out})},
      .forward = [](Context& ctx,
                    const Args& a) { linear_forward(ctx, a["x"], a["w"], a["b"], a["y"]); },
      .backward =
          [](Context& ctx, const Args& a) {
            linear_backward(ctx, a["x"], a["w"], a["dy"], a["dx"], a["dw"], a["db"]);
          },
      .modes = kGradcheck,
  };
}

// One linear layer of ELECTRA in bf16 as the layers call it: y = x W^T + b (a bf16 bias: fused),
// then dx = dy W (bf16), dW += dy^T x and db += colsum(dy) (f32). Zero-mean inputs make outputs
// near 0, so each element is judged by the error its terms allow (test/kernels/bf16_bounds.h):
// y by the bias epilogue's bound over in terms, dx by one bf16 rounding plus f32 accumulation over
// out terms, dW and db by f32 accumulation over the tokens and the f32 add into their starting
// values (u32 |result|). The bounds need x W^T and the sums of |terms|: the reference (f64, on the
// inputs as the GPU reads them) computes them beside the outputs, for the checks that follow it.
struct LinearBounds {
  std::vector<double> xw, abs_xw, abs_dx, abs_dw, abs_db;
};

OpCase linear_layer(const std::string& name, int64_t tokens, int64_t in, int64_t out,
                    unsigned modes) {
  auto bounds = std::make_shared<LinearBounds>();
  const TensorSpec::Check y_check = within([bounds, in](const std::vector<double>& want, size_t i) {
    return bf16_gemm_bias_bound(bounds->xw[i], want[i], bounds->abs_xw[i], in);
  });
  const TensorSpec::Check dx_check =
      within([bounds, out](const std::vector<double>& want, size_t i) {
        return gemm_bound(want[i], bounds->abs_dx[i], out, kBf16Roundoff);
      });
  const TensorSpec::Check dw_check =
      within([bounds, tokens](const std::vector<double>& want, size_t i) {
        return gemm_bound(want[i], bounds->abs_dw[i], tokens, kF32Roundoff);
      });
  const TensorSpec::Check db_check =
      within([bounds, tokens](const std::vector<double>& want, size_t i) {
        return gemm_bound(want[i], bounds->abs_db[i], tokens, kF32Roundoff);
      });
  const Run forward = [](Context& ctx, const Args& a) {
    linear_forward(ctx, a["x"], a["w"], a["b"], a["y"]);
  };
  const Run backward = [](Context& ctx, const Args& a) {
    linear_backward(ctx, a["x"], a["w"], a["dy"], a["dx"], a["dw"], a["db"]);
  };
  OpCase c{
      .op = "linear",
      .shape = str_cat(name, "_", tokens, "x", in, "x", out),
      .tensors = {input("x", {tokens, in}), input("w", {out, in}, {.lo = -0.05, .hi = 0.05}),
                  input("b", {out}), output("y", {tokens, out}).checked(y_check),
                  upstream("dy", "y", {tokens, out}),
                  grad("dx", "x", {tokens, in}).checked(dx_check),
                  grad_acc("dw", "w", {out, in}).checked(dw_check),
                  grad_acc("db", "b", {out}).checked(db_check)},
      .forward = forward,
      .backward = backward,
      .reference =
          [forward, backward, bounds, tokens, in, out](Context& ctx, const Args& a) {
            forward(ctx, a);
            backward(ctx, a);
            const auto abs_of = [](const Tensor& t) {
              std::vector<double> v(t.ptr<double>(), t.ptr<double>() + t.numel());
              for (double& e : v) e = std::abs(e);
              return v;
            };
            std::vector<double> x = abs_of(a["x"]), w = abs_of(a["w"]), dy = abs_of(a["dy"]);
            LinearBounds& b = *bounds;
            b.xw.assign(tokens * out, 0.0);
            b.abs_xw.assign(tokens * out, 0.0);
            b.abs_dx.assign(tokens * in, 0.0);
            b.abs_dw.assign(out * in, 0.0);
            b.abs_db.assign(out, 0.0);
            matmul(ctx, a["x"], false, a["w"], true, view(b.xw, {tokens, out}));
            matmul(ctx, view(x, {tokens, in}), false, view(w, {out, in}), true,
                   view(b.abs_xw, {tokens, out}));
            matmul(ctx, view(dy, {tokens, out}), false, view(w, {out, in}), false,
                   view(b.abs_dx, {tokens, in}));
            matmul(ctx, view(dy, {tokens, out}), true, view(x, {tokens, in}), false,
                   view(b.abs_dw, {out, in}));
            run_op(ctx, BiasGrad{.dy = view(dy, {tokens, out}), .db = Out(view(b.abs_db))});
          },
      .modes = modes,
      .dtypes = {DType::BF16},
      .tol_reason = "per-element bounds of bf16_bounds.h",
      .reference_f64 = true,
  };
  if ((modes & kBench) != 0) {
    // The CPU reference at 16384 tokens would take minutes: the benchmark validates ours (and
    // bench/matmul_bench.cu its raw cuBLASLt calls) at 128 tokens of the same layer.
    c.bench_validation = [=] { return linear_layer(name, 128, in, out, kGpu); };
    // 2 tokens in out FLOPs a GEMM: one forward, two backward (the column sums are negligible).
    c.bench_flops = [in, out](const Args& a, bool backward) {
      return (backward ? 4.0 : 2.0) * static_cast<double>(a["x"].dim(0)) * static_cast<double>(in) *
             static_cast<double>(out);
    };
  }
  return c;
}

// db += colsum(dy) in one launch (kernels/column_sum.cuh): narrow (the discriminator's single
// output over many rows: the most row blocks), odd, and wide. The parity run repeats it on the
// same context and must give the same bits, so a ticket counter left nonzero fails. Relative
// 1e-5 against the f64 sums of the same inputs, the former matmul_gpu_test's bound: the terms are
// positive (no cancellation) and f32 partial sums over row blocks keep each chain short.
OpCase bias_grad(int64_t m, int64_t n) {
  return OpCase{
      .op = "bias_grad",
      .shape = str_cat(m, "x", n),
      .tensors = {input("dy", {m, n}, positive()),
                  updated("db", {n}, positive()).relative({1e-5, 1e-5})},
      .forward = [](Context& ctx,
                    const Args& a) { run_op(ctx, BiasGrad{.dy = a["dy"], .db = Out(a["db"])}); },
      .modes = kGpu,
      .tol_reason = "f32 sums of positive terms in row-block chains",
      .reference_f64 = true,
  };
}

// The QKV bias gradients of an encoder's layers in one launch (models/linear_stack.h): groups
// stacked [m, n] matrices of dy, each group's sums into db at a stride with a gap between them
// (the layers' parameter stride), which must keep its starting values. Judged as bias_grad.
OpCase bias_grad_grouped(int64_t groups, int64_t m, int64_t n, int64_t stride) {
  return OpCase{
      .op = "bias_grad",
      .shape = str_cat(groups, "x", m, "x", n, "_stride", stride),
      .tensors = {input("dy", {groups * m, n}, positive()),
                  updated("db", {(groups - 1) * stride + n}, positive()).relative({1e-5, 1e-5})},
      .forward =
          [groups, stride](Context& ctx, const Args& a) {
            run_op(
                ctx,
                BiasGrad{.dy = a["dy"], .db = Out(a["db"]), .groups = groups, .db_stride = stride});
          },
      .modes = kGpu,
      .tol_reason = "f32 sums of positive terms in row-block chains",
      .reference_f64 = true,
  };
}

// The weight gradients of an encoder's layers as one strided batch (models/linear_stack.h):
// dW_i += dY_i^T X_i with dY and X stacked [batch, rows, .] in the activation dtype and dW f32 at a
// stride with a gap between the matrices (the layers' parameter stride; the gap keeps its values).
// K is the rows: 63 f32 additions of positive terms plus the one into dW, 2 x 64 u32 < 1e-5
// (kGemmTol's f32 bound; dW is f32 in both modes).
OpCase weight_grad_batched() {
  const int64_t batch = 3, rows = 63, in = 40, out = 72, stride = out * in + 64;
  return OpCase{
      .op = "matmul_batched",
      .shape = str_cat(batch, "x", out, "x", in, "x", rows, "_TN_beta1_stride", stride),
      .tensors = {input("dy", {batch * rows, out}, positive()).any_shape(kView),
                  input("x", {batch * rows, in}, positive()).any_shape(kView),
                  updated("dw", {batch * stride}, positive()).relative(kGemmTol).any_shape(kView)},
      .forward =
          [=](Context& ctx, const Args& a) {
            matmul_batched(ctx, MatrixBatch{a["dy"], 0, rows, out, out, rows * out}, true,
                           MatrixBatch{a["x"], 0, rows, in, in, rows * in}, false,
                           MatrixBatch{a["dw"], 0, out, in, in, stride}, batch, 1, 1);
          },
      .modes = kGpu,
      .tol = kGemmTol,
      .tol_reason = kGemmTolReason,
      .reference_f64 = true,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      cases.push_back(gemm({.m = 5, .n = 7, .k = 3, .ta = ta, .tb = tb, .bias = true}, kGradcheck));
      for (float beta : {0.0f, 1.0f}) {
        cases.push_back(gemm(
            {.m = 67, .n = 45, .k = 33, .ta = ta, .tb = tb, .alpha = 0.75f, .beta = beta}, kGpu));
      }
    }
  }
  for (bool aligned : {true, false}) {
    cases.push_back(bias_gelu(DType::F32, Kind::kParam, aligned));
    cases.push_back(bias_gelu(DType::BF16, Kind::kParam, aligned));
    cases.push_back(bias_gelu(DType::BF16, Kind::kAct, aligned));
  }
  cases.push_back(batched_attention_like());
  cases.push_back(batched_strided());
  cases.push_back(linear());
  for (const auto& [m, n] :
       {std::pair<int64_t, int64_t>{1031, 77}, {100000, 1}, {20000, 3}, {4096, 1000}}) {
    cases.push_back(bias_grad(m, n));
  }
  // ELECTRA-Small's discriminator QKV (768 columns) and a narrow odd one, in groups.
  cases.push_back(bias_grad_grouped(12, 1024, 768, 832));
  cases.push_back(bias_grad_grouped(3, 1031, 77, 128));
  cases.push_back(weight_grad_batched());
  cases.push_back(linear_layer("small_ffn1", 128, 256, 1024, kGpu));
  // ELECTRA-Small, Base and Large's linear layers at 16384 tokens.
  for (const auto& [name, in, out] :
       {std::tuple<const char*, int64_t, int64_t>{"small_qkv", 256, 768},
        {"small_ffn1", 256, 1024},
        {"small_ffn2", 1024, 256},
        {"base_qkv", 768, 2304},
        {"base_ffn1", 768, 3072},
        {"base_ffn2", 3072, 768},
        {"large_qkv", 1024, 3072},
        {"large_ffn1", 1024, 4096},
        {"large_ffn2", 4096, 1024}}) {
    cases.push_back(linear_layer(name, 16384, in, out, kBench));
  }
  return cases;
}

}  // namespace electra::test
