// String building without <format> (GCC 12 lacks it): str_cat(a, b, c) streams every argument.
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace electra {

template <class... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

}  // namespace electra
