// Leveled logging to stderr: "[electra I 12:34:56] message". The level comes from set_log_level()
// or the ELECTRA_LOG_LEVEL environment variable (debug, info, warn, error; default info).
#pragma once

#include <string>

#include "engine/str.h"

namespace electra {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

LogLevel log_level();
void set_log_level(LogLevel level);
// Parses "debug"/"info"/"warn"/"error"; throws UserError naming the value otherwise.
LogLevel parse_log_level(const std::string& name);
void log_message(LogLevel level, const std::string& message);

template <class... Args>
void log_debug(Args&&... args) {
  if (log_level() <= LogLevel::kDebug) log_message(LogLevel::kDebug, str_cat(args...));
}
template <class... Args>
void log_info(Args&&... args) {
  if (log_level() <= LogLevel::kInfo) log_message(LogLevel::kInfo, str_cat(args...));
}
template <class... Args>
void log_warn(Args&&... args) {
  if (log_level() <= LogLevel::kWarn) log_message(LogLevel::kWarn, str_cat(args...));
}
template <class... Args>
void log_error(Args&&... args) {
  log_message(LogLevel::kError, str_cat(args...));
}

}  // namespace electra
