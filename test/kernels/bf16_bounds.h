// Error bounds of GPU results, derived from the roundings the kernels do: shared by the GPU tests
// (which apply them to what the device wrote) and bf16_emulation_test.cpp (which applies them to
// CPU emulations of the same roundings, so that a bound that does not hold is found without a
// GPU). u is a format's unit roundoff: rounding to nearest changes x by at most u |x|.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace electra::test {

constexpr double kBf16Roundoff = 1.0 / 256;        // 8 significant bits: 2^-8
constexpr double kF32Roundoff = 1.0 / 16777216.0;  // 24 significant bits: 2^-24

// The error of a GEMM's f32 accumulation over k terms at an element where abs_xw = |x| |W|^T:
// the products of bf16 inputs are exact in f32, and each of the k - 1 additions is within one f32
// ulp (2 u32: a tensor core may truncate instead of rounding) of its exact result, so the sum is
// within 2 k u32 abs_xw (to first order, like every bound here).
inline double f32_accumulation_bound(double abs_xw, int64_t k) {
  return 2.0 * static_cast<double>(k) * kF32Roundoff * abs_xw;
}

// |y - x W^T| for a GEMM element xw = x W^T written in a format of unit roundoff u (one rounding).
inline double gemm_bound(double xw, double abs_xw, int64_t k, double u) {
  return u * std::abs(xw) + f32_accumulation_bound(abs_xw, k);
}

// |pre - (x W^T + b)| for one element of a bf16 GEMM with a bias epilogue, pre = xw + b (exact
// sums of the bf16 inputs): the fused epilogue rounds xw + b to bf16 once (u |pre|); the unfused
// one (an f32 bias with a bf16 output, or an unaligned bias) rounds xw to bf16 (u |xw|), then
// xw + b again (u |pre|). Both are within u (|xw| + |pre|) plus the accumulation's error.
inline double bf16_gemm_bias_bound(double xw, double pre, double abs_xw, int64_t k) {
  return kBf16Roundoff * (std::abs(xw) + std::abs(pre)) + f32_accumulation_bound(abs_xw, k);
}

// The exact GELU, 0.5 x (1 + erf(x / sqrt 2)).
inline double gelu_exact(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// |y - gelu(pre)| where the kernel computes y = bf16(0.5f * pre * (1 + erff(pre * c))) in f32 from
// a pre-activation it read (kernels/matmul.cu, bias_gelu_kernel). The f32 GELU: pre * c is within
// 2 u32 of pre / sqrt 2 (c itself rounded, then the product), which moves erf by at most
// 2 u32 * max_t 2 t exp(-t^2) / sqrt(pi) < u32; erff is within 2 ulp <= 4 u32 (|erf| <= 1); so
// 1 + erf is within 5 u32 absolute plus its own rounding, i.e. relative 5 u32 / (1 + erf) + u32,
// and the product with 0.5 pre adds u32: delta = u32 (2 + 5 / (1 + erf(pre / sqrt 2))). The
// f32 error is small next to bf16's except where 1 + erf is tiny (pre far below zero). Rounding
// to bf16 then adds u (1 + delta) relative.
inline double bf16_gelu_bound(double pre) {
  const double phi2 = 1.0 + std::erf(pre / std::sqrt(2.0));
  const double delta = kF32Roundoff * (2.0 + 5.0 / phi2);
  return std::abs(gelu_exact(pre)) * (kBf16Roundoff * (1.0 + delta) + delta);
}

// max_i |got_i - want_i| / bound_i as a failure message; empty when every element is within its
// bound (a NaN fails).
inline std::string over_bound(const std::vector<double>& got, const std::vector<double>& want,
                              const std::function<double(size_t)>& bound) {
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double ratio = std::abs(got[i] - want[i]) / bound(i);
    if (!(ratio <= worst)) {
      worst = ratio;
      at = i;
      if (std::isnan(ratio)) break;  // a later ratio must not replace it
    }
  }
  if (worst <= 1) return {};
  std::ostringstream why;
  why << "element " << at << " is " << got[at] << ", want " << want[at] << " within " << bound(at)
      << " (error / bound " << worst << ")";
  return why.str();
}

}  // namespace electra::test
