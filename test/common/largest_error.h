// The largest error a GPU test measured, read off its assertions: a comparison `error < bound`
// (or <=) whose two sides Catch2 expands to numbers gives error / bound, the share of its bound the
// error used. gpu_main.cpp's listener keeps the assertion with the largest share and prints it at
// the end of the run, so that scripts/gpu_check.sh's summary shows how close each test came to its
// tolerance (a pass at 0.98 of the bound is news too) without any test printing it itself.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace electra::test {

struct MeasuredError {
  double error = 0;
  double bound = 0;
  double share() const { return error / bound; }
};

// Parses Catch2's expansion of `a < b` or `a <= b` with both sides plain numbers and 0 < b; any
// other expression (==, Approx, strings, a negative or zero bound) gives nothing.
inline std::optional<MeasuredError> parse_error_bound(const std::string& expansion) {
  const size_t op = expansion.find(" <");
  if (op == std::string::npos) return std::nullopt;
  const size_t rhs = expansion.compare(op, 3, " <=") == 0 ? op + 3 : op + 2;
  if (rhs >= expansion.size() || expansion[rhs] != ' ') return std::nullopt;
  auto number = [](const std::string& text) -> std::optional<double> {
    const size_t first = text.find_first_not_of(' ');
    if (first == std::string::npos) return std::nullopt;
    const char* begin = text.c_str() + first;
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (end == begin) return std::nullopt;
    for (const char* c = end; *c != '\0'; ++c) {
      if (*c != ' ' && *c != 'f') return std::nullopt;  // Catch2 writes floats as 1.5f
    }
    return value;
  };
  const auto error = number(expansion.substr(0, op));
  const auto bound = number(expansion.substr(rhs));
  if (!error || !bound || !(*bound > 0) || !(*error >= 0)) return std::nullopt;
  return MeasuredError{*error, *bound};
}

}  // namespace electra::test
