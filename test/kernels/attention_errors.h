// How attention's gradients are judged against a reference (attention_cases.cpp: the GPU test
// and the benchmark's validation; bf16_emulation_test): dQ and dK normwise,
// ||got - ref||_2 / ||ref||_2, because they are sums of dS = P (dP - rowsum) whose rows sum to
// zero, so an element near zero carries the rounding of much larger terms (the CPU's own f32 result
// differs from its f64 one by 4e-4 elementwise but 8e-7 normwise there); dV elementwise
// (test::max_relative_error), which the callers' positive dout makes a sum of positive terms.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "test/common/test_util.h"

namespace electra::test {

// The Q, K or V columns (part 0, 1, 2) of a [rows, 3H] array.
template <class T>
std::vector<double> qkv_part(const std::vector<T>& qkv, int64_t h, int part) {
  std::vector<double> out;
  for (size_t row = 0; row < qkv.size() / (3 * h); ++row) {
    for (int64_t c = 0; c < h; ++c) out.push_back(qkv[row * 3 * h + part * h + c]);
  }
  return out;
}

inline double l2_norm(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x * x;
  return std::sqrt(sum);
}

// ||got - ref||_2 / ||ref||_2.
inline double l2_relative_error(const std::vector<double>& got, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return got.size() == ref.size() ? std::sqrt(diff / norm) : INFINITY;
}

struct AttentionGradErrors {
  double dq = 0, dk = 0, dv = 0;
};

// The errors of dqkv [B, T, 3H] against ref. Where ref's dQ or dK is exactly 0 (T = 1: a row's
// one key has P = 1 and dS = P (dP - P dP) = 0) its normwise error would be x / 0; a device's
// values there are rounding only (D from the rounded out against dP from V), so that part is
// measured against dV's norm instead: ||got|| / ||ref dV||.
template <class T, class R>
AttentionGradErrors attention_grad_errors(const std::vector<T>& got, const std::vector<R>& ref,
                                          int64_t h) {
  const std::vector<double> ref_dv = qkv_part(ref, h, 2);
  const auto normwise = [&](int part) {
    const std::vector<double> g = qkv_part(got, h, part), r = qkv_part(ref, h, part);
    return l2_norm(r) == 0 ? l2_norm(g) / l2_norm(ref_dv) : l2_relative_error(g, r);
  };
  return AttentionGradErrors{normwise(0), normwise(1),
                             max_relative_error(qkv_part(got, h, 2), ref_dv)};
}

}  // namespace electra::test
