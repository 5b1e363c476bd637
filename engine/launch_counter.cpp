#include "engine/launch_counter.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace electra {

void LaunchCounter::count(const char* part, const char* op, const Launches& launches) {
  auto in_part = std::find_if(parts_.begin(), parts_.end(),
                              [&](const auto& entry) { return entry.first == part; });
  if (in_part == parts_.end()) in_part = parts_.insert(parts_.end(), {part, Launches{}});
  in_part->second += launches;
  auto in_op = std::find_if(ops_.begin(), ops_.end(), [&](const OpCount& entry) {
    return entry.part == part && entry.op == op;
  });
  if (in_op == ops_.end()) in_op = ops_.insert(ops_.end(), OpCount{part, op});
  ++in_op->calls;
  in_op->launches += launches;
}

bool LaunchCounter::before(Context&, const OpCall& call) {
  count(call.part, call.name, call.launches);
  return !dry_run_;
}

void LaunchCounter::memset(size_t) {
  count(current_model_part(), "memset", Launches{.memsets = 1});
}

Launches LaunchCounter::total() const {
  Launches sum;
  for (const auto& [name, launches] : parts_) sum += launches;
  return sum;
}

Launches LaunchCounter::part(const std::string& name) const {
  for (const auto& [part, launches] : parts_) {
    if (part == name) return launches;
  }
  return {};
}

std::string LaunchCounter::table() const {
  std::string out;
  char line[160];
  auto row = [&](const std::string& part, const std::string& op, const std::string& calls,
                 const Launches& l) {
    std::snprintf(
        line, sizeof(line), "%-14s %-30s %6s %8" PRId64 " %8" PRId64 " %8" PRId64 " %8" PRId64 "\n",
        part.c_str(), op.c_str(), calls.c_str(), l.total(), l.kernels, l.library_calls, l.memsets);
    out += line;
  };
  std::snprintf(line, sizeof(line), "%-14s %-30s %6s %8s %8s %8s %8s\n", "part", "op", "calls",
                "launches", "kernels", "library", "memsets");
  out += line;
  for (const auto& [part, launches] : parts_) row(part, "(all)", "", launches);
  row("total", "(all)", "", total());
  for (const OpCount& op : ops_) row(op.part, op.op, std::to_string(op.calls), op.launches);
  return out;
}

}  // namespace electra
