// Shared test helpers: random inputs (never zeros), host views, error measures, gradient checks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <random>
#include <vector>

#include "engine/tensor.h"

namespace electra::test {

// A CPU tensor viewing `v` (no copy) with shape `dims`, or flat [v.size()] without dims.
template <class T>
Tensor view(std::vector<T>& v, std::initializer_list<int64_t> dims) {
  return Tensor::view_of(v.data(), Device::CPU, dims);
}

template <class T>
Tensor view(std::vector<T>& v) {
  return Tensor::view_of(v.data(), Device::CPU, {static_cast<int64_t>(v.size())});
}

// Uniform values in [lo, hi) from a fixed seed; with lo < 0 < hi zeros are measure-zero, and
// `away_from_zero` pushes |x| >= 0.1 * max(|lo|, |hi|) for ops whose derivative is singular at 0.
template <class T>
std::vector<T> random_vector(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0,
                             bool away_from_zero = false) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  const double floor = 0.1 * std::max(std::abs(lo), std::abs(hi));
  std::vector<T> out(n);
  for (auto& x : out) {
    double v = dist(gen);
    if (away_from_zero && std::abs(v) < floor) v = v < 0 ? v - floor : v + floor;
    x = static_cast<T>(v);
  }
  return out;
}

// The number of elements of a shape (1 for no dims).
inline int64_t shape_elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

inline std::vector<int32_t> random_ints(size_t n, uint64_t seed, int32_t lo, int32_t hi_inclusive) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi_inclusive);
  std::vector<int32_t> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

// max_i |a_i - b_i| / max(|b_i|, floor), floor = 1e-3 * max_i |b_i| (plus a tiny absolute term):
// an elementwise relative error that does not blow up on entries that are zero up to rounding.
template <class A, class B>
double max_relative_error(const std::vector<A>& a, const std::vector<B>& b) {
  double scale = 0;
  for (const auto& x : b) scale = std::max(scale, std::abs(static_cast<double>(x)));
  const double floor = 1e-3 * scale + 1e-300;
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double ref = static_cast<double>(b[i]);
    const double err = std::abs(static_cast<double>(a[i]) - ref) / std::max(std::abs(ref), floor);
    if (std::isnan(err)) return INFINITY;
    worst = std::max(worst, err);
  }
  return a.size() == b.size() ? worst : INFINITY;
}

// max_i |a_i - b_i| / max_i |b_i|: the normwise error. The tests use it because these outputs are
// sums whose terms cancel (row and column reductions, GELU's zero crossing, x - mean), where an
// elementwise relative error in f32 measures the conditioning of the entry, not the kernel.
template <class A, class B>
double normwise_error(const std::vector<A>& a, const std::vector<B>& b) {
  if (a.size() != b.size()) return INFINITY;
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return std::isnan(err) ? INFINITY : err / scale;
}

struct GradcheckResult {
  double max_relative_error = 0;  // as in max_relative_error(analytic, numeric)
  size_t checked = 0;             // number of coordinates checked
};

// Central differences: for each checked coordinate i of x, (loss(x + h e_i) - loss(x - h e_i)) /
// 2h, compared with analytic[i]. `max_checks` > 0 checks an evenly spaced subset (for large
// inputs). loss() must read x through the same storage (x is perturbed in place and restored).
inline GradcheckResult gradcheck(std::vector<double>& x, const std::vector<double>& analytic,
                                 const std::function<double()>& loss, double h = 1e-6,
                                 size_t max_checks = 0) {
  const size_t n = x.size();
  const size_t stride = (max_checks == 0 || max_checks >= n) ? 1 : n / max_checks;
  std::vector<double> num, ana;
  for (size_t i = 0; i < n; i += stride) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    num.push_back((up - down) / (2 * h));
    ana.push_back(analytic.at(i));
  }
  return GradcheckResult{max_relative_error(ana, num), num.size()};
}

// sum_i w_i * y_i: the scalar that turns an op's output into a loss whose gradient w.r.t. y is w.
inline double weighted_sum(const std::vector<double>& y, const std::vector<double>& w) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * w[i];
  return s;
}

// sum_i w_i y_i, Neumaier-compensated in long double. Callers subtract the unperturbed loss before
// rounding to double: |loss| ~ 5e2 would otherwise leave ~1e-13 of rounding in each evaluation,
// 5e-9 after dividing by the 2e-5 step, against a tolerance of 1e-6 relative.
inline long double compensated_weighted_sum(const std::vector<double>& y,
                                            const std::vector<double>& w) {
  long double sum = 0, carry = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const long double term = static_cast<long double>(y[i]) * w[i];
    const long double next = sum + term;
    carry += std::fabs(sum) >= std::fabs(term) ? (sum - next) + term : (term - next) + sum;
    sum = next;
  }
  return sum + carry;
}

}  // namespace electra::test
