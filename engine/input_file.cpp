#include "engine/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "engine/error.h"

namespace electra {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

void require_regular_file(const std::string& path, const char* what) {
  struct stat st {};
  ELECTRA_USER_CHECK(::stat(path.c_str(), &st) == 0, path, ": cannot open ", what, " (",
                     std::strerror(errno), ")");
  ELECTRA_USER_CHECK(S_ISREG(st.st_mode), path, ": is ", kind_of(st.st_mode), ", expected a ",
                     what);
}

}  // namespace electra
