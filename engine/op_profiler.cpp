#include "engine/op_profiler.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <numeric>

namespace electra {

OpProfiler::OpProfiler(const Context& ctx) : cuda_(ctx.is_cuda()), stream_(ctx.stream()) {}

OpProfiler::~OpProfiler() = default;

size_t OpProfiler::row_of(const char* part, const char* op, const std::string& label) {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].part == part && rows_[i].op == op && rows_[i].label == label) return i;
  }
  rows_.push_back(Row{part, op, label});
  return rows_.size() - 1;
}

bool OpProfiler::before(Context&, const OpCall& call) {
  current_ = row_of(call.part, call.name, call.label);
  Row& row = rows_[current_];
  ++row.calls;
  row.flops += call.flops;
  row.bytes += call.bytes;
  row.launches += call.launches;
  if (!cuda_) {
    watch_.restart();
    return true;
  }
  const size_t i = timed_rows_.size();
  if (i == timers_.size()) timers_.push_back(std::make_unique<CudaEventTimer>(stream_));
  timed_rows_.push_back(current_);
  timers_[i]->start();
  return true;
}

void OpProfiler::after(Context&, const OpCall&) {
  if (!cuda_) {
    rows_[current_].ms += watch_.seconds() * 1e3;
    return;
  }
  timers_[timed_rows_.size() - 1]->stop();
}

void OpProfiler::memset(size_t) {
  Row& row = rows_[row_of(current_model_part(), "memset", "")];
  ++row.calls;
  row.launches += Launches{.memsets = 1};
}

void OpProfiler::collect() {
  for (size_t i = 0; i < timed_rows_.size(); ++i) {
    rows_[timed_rows_[i]].ms += timers_[i]->milliseconds();
  }
  timed_rows_.clear();
}

double OpProfiler::op_ms() const {
  return std::accumulate(rows_.begin(), rows_.end(), 0.0,
                         [](double sum, const Row& row) { return sum + row.ms; });
}

Launches OpProfiler::launches() const {
  Launches sum;
  for (const Row& row : rows_) sum += row.launches;
  return sum;
}

std::string OpProfiler::table(double update_ms) const {
  std::string out;
  char line[256];
  auto rate = [](double amount, double ms, double unit) {
    if (amount <= 0 || ms <= 0) return std::string("-");
    char text[32];
    std::snprintf(text, sizeof(text), "%.3g", amount / (ms * 1e-3) / unit);
    return std::string(text);
  };
  auto emit = [&](const std::string& part, const std::string& op, const std::string& label,
                  const std::string& calls, const Launches& launches, double ms,
                  const std::string& gbs, const std::string& tflops) {
    std::snprintf(line, sizeof(line), "%-14s %-28s %-28s %6s %8" PRId64 " %10.3f %6.1f %8s %8s\n",
                  part.c_str(), op.c_str(), label.c_str(), calls.c_str(), launches.total(), ms,
                  update_ms > 0 ? 100.0 * ms / update_ms : 0.0, gbs.c_str(), tflops.c_str());
    out += line;
  };
  std::snprintf(line, sizeof(line), "%-14s %-28s %-28s %6s %8s %10s %6s %8s %8s\n", "part", "op",
                "label", "calls", "launches", "total_ms", "share%", "GB/s", "TFLOP/s");
  out += line;
  // Per part, in first-seen order.
  std::vector<std::string> parts;
  for (const Row& row : rows_) {
    if (std::find(parts.begin(), parts.end(), row.part) == parts.end()) parts.push_back(row.part);
  }
  for (const std::string& part : parts) {
    Launches launches;
    double ms = 0;
    for (const Row& row : rows_) {
      if (row.part != part) continue;
      launches += row.launches;
      ms += row.ms;
    }
    emit(part, "(all ops)", "", "", launches, ms, "-", "-");
  }
  emit("(ops)", "", "", "", launches(), op_ms(), "-", "-");
  emit("(outside ops)", "memsets, uploads, host", "", "", Launches{}, update_ms - op_ms(), "-",
       "-");
  std::vector<const Row*> sorted;
  for (const Row& row : rows_) sorted.push_back(&row);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Row* a, const Row* b) { return a->ms > b->ms; });
  for (const Row* row : sorted) {
    emit(row->part, row->op, row->label, std::to_string(row->calls), row->launches, row->ms,
         rate(row->bytes, row->ms, 1e9), rate(row->flops, row->ms, 1e12));
  }
  return out;
}

}  // namespace electra
