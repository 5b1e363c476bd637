// Where an output that failed its comparison is wrong, in the coordinates of its shape: a GPU run
// is rare and short (DEVELOPERS.md), so its log must say enough to find a wrong fragment layout
// or shuffle without another run. A kernel bug leaves a pattern (one of the Q, K, V slices,
// every 16th row, one head, one tile's column); rounding leaves scattered points. The report
// names the elements that matter:
//   - if the output has non-finite elements where the reference is finite (an unwritten element
//     keeps the harness's NaN poison), those;
//   - otherwise those whose error |got - want| is at least a quarter of the largest error, a set
//     that a wrong region dominates whatever the comparison's tolerance was.
// For each dimension it lists the indices those elements touch as ranges ("8-15, 24-31"), and it
// gives the largest error's coordinates with both values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace electra::test {

// "0-3, 8, 10-11": the indices i with hit[i], as at most `max_ranges` ranges, then
// "(+K more ranges)"; "none" if no index is hit.
std::string index_ranges(const std::vector<bool>& hit, size_t max_ranges = 6);

// The report described above for `got` against `want` of shape `dims` (row-major; a flat index if
// the dims do not multiply to the size). Empty when got equals want everywhere (NaN matching NaN).
std::string error_locus(const std::vector<double>& got, const std::vector<double>& want,
                        const std::vector<int64_t>& dims);

}  // namespace electra::test
