// output_layernorm (kernels/output_layernorm.h) for the op harness (test/common/op_case.h): GPU
// parity of the fused kernel (bf16 only) against the CPU reference in f64 on the inputs as the
// GPU reads them, at H = K = 64 (the attention output of ELECTRA-Small's generator), for a single
// row, one full tile of 64 rows, and partial tiles (100, 300 rows), without dropout and with
// p = 0.1, and at site offsets that are not multiples of 4; and the benchmark at 16384 rows
// against the unfused sequence (cuBLASLt GEMM with its bias epilogue, residual LayerNorm), which
// is validated by the same checks. The CPU side of the op is the unfused ops themselves
// (kernels/output_layernorm_cpu.cpp), so it has no gradient check of its own: its backward is
// theirs, checked in matmul_cases and layernorm_cases.
//
// sum is judged against dropout(x W^T + b) + residual of the inputs, mean, rstd and y against the
// LayerNorm of the GPU's own sum (residual_layernorm_bounds.h).
#include <cmath>
#include <memory>

#include "kernels/output_layernorm.h"
#include "test/kernels/residual_layernorm_bounds.h"

namespace electra::test {
namespace {

constexpr int64_t kH = LayerNormSeen::kH, kK = 64;

// The inputs as the GPU read them (from the f64 reference) and what the GPU wrote.
struct Seen : LayerNormSeen {
  std::vector<double> x, w, b, residual;
};

// `fused`: the op; otherwise the unfused ops of models/self_attention.cpp's wide path (the
// benchmark's baseline), on the same tensors and judged by the same bounds (FusedCaseMaker).
OpCase output_case(const std::string& shape, int64_t n, float p, unsigned modes, bool fused,
                   uint64_t shift) {
  auto seen = std::make_shared<Seen>();
  auto site = [p, shift](const Context& ctx) { return case_site(ctx, p, shift); };
  const Run forward = [site, fused](Context& ctx, const Args& a) {
    const OutputLayerNormForward op{.x = a["x"],
                                    .w = a["w"],
                                    .b = a["b"],
                                    .norm = {.x = a["sublayer"],
                                             .residual = a["residual"],
                                             .site = site(ctx),
                                             .gamma = a["gamma"],
                                             .beta = a["beta"],
                                             .eps = LayerNormSeen::kEps,
                                             .sum = Out(a["sum"]),
                                             .y = Out(a["y"]),
                                             .mean = Out(a["mean"]),
                                             .rstd = Out(a["rstd"])}};
    if (fused) {
      run_op(ctx, op);
    } else {
      output_layernorm_unfused(ctx, op);
    }
  };
  const Run reference = [forward, site, seen, n](Context& ctx, const Args& a) {
    forward(ctx, a);
    Seen& s = *seen;
    s.x = values_of(a["x"]);
    s.w = values_of(a["w"]);
    s.b = values_of(a["b"]);
    s.residual = values_of(a["residual"]);
    record_layernorm_inputs(ctx, a, site(ctx), n, s);
  };
  const TensorSpec::Check sum = sum_check(seen, [seen](int64_t r, int64_t c) {
    const Seen& s = *seen;
    return sum_bound(s, s.x, s.w, s.b, s.residual, kK, r, c);
  });

  const OpCase c{
      .op = fused ? "output_layernorm" : "output_layernorm_unfused",
      .shape =
          str_cat(shape, "x", kK, "x", kH, "_p", p, shift != 0 ? str_cat("_shift", shift) : ""),
      // o of about +-0.5 (64 terms of x in [-1, 1] times W in [-0.1, 0.1], b in [-0.5, 0.5]) next
      // to the residual in [-1, 1].
      .tensors = {input("x", {n, kK}), input("w", {kH, kK}, {.lo = -0.1, .hi = 0.1}),
                  input("b", {kH}, {.lo = -0.5, .hi = 0.5}), input("residual", {n, kH}),
                  param("gamma", {kH}, {.lo = 0.5, .hi = 1.5}), param("beta", {kH})},
      .forward = forward,
      .reference = reference,
      .modes = modes,
  };
  // 2 N K H FLOPs.
  return fused_layernorm_case(c, n, p, seen, sum, output_case, "unfused_2_launches", 2.0 * kK * kH);
}

}  // namespace

std::vector<OpCase> op_cases() {
  return fused_layernorm_cases(output_case);
}

}  // namespace electra::test
