// Where a failed output is wrong, in its shape's coordinates (error_locus.h).
#include "test/common/error_locus.h"

#include <cmath>
#include <sstream>

#include "test/common/test_util.h"

namespace electra::test {
namespace {

bool same(double got, double want) {
  return got == want || (std::isnan(got) && std::isnan(want));
}

// A mismatch no error measures: one side non-finite (NaN poison left unwritten, an overflow).
bool nonfinite_mismatch(double got, double want) {
  return !same(got, want) && (!std::isfinite(got) || !std::isfinite(want));
}

std::string coordinates(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> at(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    at[d] = flat % dims[d];
    flat /= dims[d];
  }
  std::ostringstream out;
  out << "[";
  for (size_t d = 0; d < at.size(); ++d) out << (d > 0 ? ", " : "") << at[d];
  out << "]";
  return out.str();
}

}  // namespace

std::string index_ranges(const std::vector<bool>& hit, size_t max_ranges) {
  std::ostringstream out;
  size_t ranges = 0;
  for (size_t i = 0; i < hit.size();) {
    if (!hit[i]) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end + 1 < hit.size() && hit[end + 1]) ++end;
    if (ranges < max_ranges) {
      out << (ranges > 0 ? ", " : "") << i;
      if (end > i) out << "-" << end;
    }
    ++ranges;
    i = end + 1;
  }
  if (ranges == 0) return "none";
  if (ranges > max_ranges) out << " (+" << ranges - max_ranges << " more ranges)";
  return out.str();
}

std::string error_locus(const std::vector<double>& got, const std::vector<double>& want,
                        const std::vector<int64_t>& dims_in) {
  const size_t n = std::min(got.size(), want.size());
  const std::vector<int64_t> dims =
      shape_elements(dims_in) == static_cast<int64_t>(n) && !dims_in.empty()
          ? dims_in
          : std::vector<int64_t>{static_cast<int64_t>(n)};

  size_t nonfinite = 0, worst = 0;
  double largest = 0;
  for (size_t i = 0; i < n; ++i) {
    if (nonfinite_mismatch(got[i], want[i])) {
      if (nonfinite++ == 0) worst = i;
    } else if (!same(got[i], want[i]) && std::abs(got[i] - want[i]) > largest) {
      largest = std::abs(got[i] - want[i]);
      if (nonfinite == 0) worst = i;
    }
  }
  if (nonfinite == 0 && largest == 0) return {};

  std::vector<std::vector<bool>> hit(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) hit[d].assign(static_cast<size_t>(dims[d]), false);
  size_t marked = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool counts = nonfinite > 0
                            ? nonfinite_mismatch(got[i], want[i])
                            : !same(got[i], want[i]) && std::abs(got[i] - want[i]) >= largest / 4;
    if (!counts) continue;
    ++marked;
    auto flat = static_cast<int64_t>(i);
    for (size_t d = dims.size(); d-- > 0;) {
      hit[d][static_cast<size_t>(flat % dims[d])] = true;
      flat /= dims[d];
    }
  }

  std::ostringstream out;
  out << marked << " of " << n << " elements ";
  if (nonfinite > 0) {
    out << "non-finite on one side only, the first";
  } else {
    out << "have an error of at least 1/4 of the largest, " << largest;
  }
  out << " at " << coordinates(static_cast<int64_t>(worst), dims) << " (got " << got[worst]
      << ", want " << want[worst] << ")";
  for (size_t d = 0; d < dims.size(); ++d) {
    out << "; dim " << d << " (" << dims[d] << "): " << index_ranges(hit[d]);
  }
  return out.str();
}

}  // namespace electra::test
