// Shared by the fuzz harnesses (test/fuzz/README.md). A harness feeds one input to a reader and
// accepts exactly one outcome besides success: electra::UserError (a one-line error naming the
// input). Any other exception, a crash or a sanitizer report is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace electra::fuzz {

// Writes the input to a file of this process (rewritten on every call) for readers that take a
// path (mmap, ifstream); returns the path.
inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/electra-fuzz-" +
                           std::to_string(::getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace electra::fuzz
