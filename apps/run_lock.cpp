#include "apps/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include "engine/error.h"

namespace electra::apps {
namespace fs = std::filesystem;

namespace {

// What a writer leaves when it dies mid-write: a checkpoint's temporary directory
// (trainer_checkpoint.h) or write_file_atomic's "<file>.tmp.<pid>".
bool is_stale_temporary(const std::string& name) {
  static const std::regex pattern(R"(\.checkpoint-\d+\.tmp|.+\.tmp\.\d+)");
  return std::regex_match(name, pattern);
}

}  // namespace

RunDirLock::RunDirLock(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  ELECTRA_USER_CHECK(!ec && fs::is_directory(dir), dir, ": cannot create the run directory",
                     ec ? ": " + ec.message() : std::string(" (a file of that name exists)"));
  const std::string path = (fs::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ELECTRA_USER_CHECK(fd_ >= 0, path, ": cannot open the run directory's lock file (",
                     std::strerror(errno), ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[32] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    ::close(fd_);
    fd_ = -1;
    ELECTRA_USER_CHECK(error != EWOULDBLOCK, dir, ": in use by another run (PID ",
                       n > 0 ? std::string(holder, static_cast<size_t>(n)) : std::string("?"),
                       ", lock file ", path, "); use another checkpoint.dir or stop that run");
    throw UserError(str_cat(path, ": cannot lock (", std::strerror(error), ")"));
  }
  const std::string pid = str_cat(::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    std::fprintf(stderr, "warning: %s: cannot record this process's PID\n", path.c_str());
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_stale_temporary(name)) continue;
    std::error_code removed;
    fs::remove_all(entry.path(), removed);
    std::fprintf(stderr, "removed %s, left half-written by a run that did not finish\n",
                 entry.path().c_str());
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace electra::apps
