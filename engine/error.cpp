#include "engine/error.h"

namespace electra {

void throw_check_failure(const char* cond, const std::string& message, const char* file, int line) {
  throw Error(str_cat(file, ":", line, ": check `", cond, "` failed", message.empty() ? "" : ": ",
                      message));
}

void throw_api_failure(const char* api, const char* call, long code, const char* code_name,
                       const char* detail, const char* file, int line) {
  throw Error(str_cat(file, ":", line, ": ", api, " call `", call, "` failed: ", code_name, " (",
                      code, ")", (detail && *detail) ? ": " : "", detail ? detail : ""));
}

}  // namespace electra
