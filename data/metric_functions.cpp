#include "data/metric_functions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "engine/error.h"

namespace electra {
namespace {

template <class T>
void check_pair(std::span<const T> predicted, std::span<const T> gold) {
  ELECTRA_CHECK(predicted.size() == gold.size(),
                "metric inputs differ in length: ", predicted.size(), " predictions vs ",
                gold.size(), " gold values");
  ELECTRA_CHECK(!gold.empty(), "metric of an empty set");
}

}  // namespace

double accuracy(std::span<const int32_t> predicted, std::span<const int32_t> gold) {
  check_pair(predicted, gold);
  size_t correct = 0;
  for (size_t i = 0; i < gold.size(); ++i) correct += predicted[i] == gold[i];
  return static_cast<double>(correct) / static_cast<double>(gold.size());
}

double f1_binary(std::span<const int32_t> predicted, std::span<const int32_t> gold) {
  check_pair(predicted, gold);
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < gold.size(); ++i) {
    const bool p = predicted[i] == 1, g = gold[i] == 1;
    tp += p && g;
    fp += p && !g;
    fn += !p && g;
  }
  return tp == 0 ? 0.0 : 2 * tp / (2 * tp + fp + fn);
}

double matthews_corrcoef(std::span<const int32_t> predicted, std::span<const int32_t> gold) {
  check_pair(predicted, gold);
  std::map<int32_t, double> p, t;
  double c = 0;
  for (size_t i = 0; i < gold.size(); ++i) {
    p[predicted[i]] += 1;
    t[gold[i]] += 1;
    c += predicted[i] == gold[i];
  }
  const double s = static_cast<double>(gold.size());
  double pt = 0, pp = 0, tt = 0;
  for (const auto& [k, pk] : p) {
    pp += pk * pk;
    const auto it = t.find(k);
    if (it != t.end()) pt += pk * it->second;
  }
  for (const auto& [k, tk] : t) tt += tk * tk;
  const double denominator = std::sqrt((s * s - pp) * (s * s - tt));
  return denominator == 0 ? 0.0 : (c * s - pt) / denominator;
}

double pearson(std::span<const double> x, std::span<const double> y) {
  check_pair(x, y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  return sxy / std::sqrt(sxx * syy);
}

std::vector<double> average_ranks(std::span<const double> x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin + 1;
    while (end < order.size() && x[order[end]] == x[order[begin]]) ++end;
    // Positions begin..end-1 hold equal values: each gets the mean of ranks begin+1..end.
    const double rank = 0.5 * static_cast<double>(begin + 1 + end);
    for (size_t i = begin; i < end; ++i) ranks[order[i]] = rank;
    begin = end;
  }
  return ranks;
}

double spearman(std::span<const double> x, std::span<const double> y) {
  check_pair(x, y);
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  return pearson(rx, ry);
}

}  // namespace electra
