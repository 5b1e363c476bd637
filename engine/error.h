// Error types and checking macros.
//
// electra::Error      a bug or a failed library call (CUDA, cuBLAS, NCCL, MPI): the message
//                     names the call, the code, the file and the line.
// electra::UserError  bad input (config, data, paths): the message names the file/key/position.
//                     apps/ prints it on one line and exits non-zero.
#pragma once

#include <stdexcept>
#include <string>

#include "engine/str.h"

namespace electra {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& what) : std::runtime_error(what) {}
};

// Throws Error("file:line: check `cond` failed: message").
[[noreturn]] void throw_check_failure(const char* cond, const std::string& message,
                                      const char* file, int line);

// Throws Error("file:line: <api> call `call` failed: <code_name> (<code>): <detail>").
[[noreturn]] void throw_api_failure(const char* api, const char* call, long code,
                                    const char* code_name, const char* detail, const char* file,
                                    int line);

}  // namespace electra

// ELECTRA_CHECK(cond, message parts...): an internal invariant (shape, dtype, device).
#define ELECTRA_CHECK(cond, ...)                                                                  \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      ::electra::throw_check_failure(#cond, ::electra::str_cat(__VA_ARGS__), __FILE__, __LINE__); \
    }                                                                                             \
  } while (0)

// ELECTRA_USER_CHECK(cond, message parts...): a user-facing error; the message must name the
// offending file/key/position.
#define ELECTRA_USER_CHECK(cond, ...)                                         \
  do {                                                                        \
    if (!(cond)) throw ::electra::UserError(::electra::str_cat(__VA_ARGS__)); \
  } while (0)
