#include "engine/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "engine/error.h"

namespace electra {

static LogLevel initial_level() {
  const char* env = std::getenv("ELECTRA_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return LogLevel::kInfo;
  try {
    return parse_log_level(env);
  } catch (const UserError&) {
    std::fprintf(stderr, "electra: ignoring ELECTRA_LOG_LEVEL=%s (use debug, info, warn, error)\n",
                 env);
    return LogLevel::kInfo;
  }
}

static std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

LogLevel log_level() {
  return static_cast<LogLevel>(level_storage().load());
}
void set_log_level(LogLevel level) {
  level_storage().store(static_cast<int>(level));
}

LogLevel parse_log_level(const std::string& name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  throw UserError(str_cat("unknown log level '", name, "' (use debug, info, warn, error)"));
}

void log_message(LogLevel level, const std::string& message) {
  static std::mutex mutex;
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[16];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &local);
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[electra %c %s] %s\n", kLetters[static_cast<int>(level)], stamp,
               message.c_str());
}

}  // namespace electra
