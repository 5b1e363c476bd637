// An exclusive lock on a run directory, so that two runs never write the same checkpoints and
// metrics.jsonl. It is an flock() on "<dir>/.lock", which holds the holder's PID: the kernel
// releases it when the process ends in any way (kill -9 included), so a stale lock never blocks
// the next run.
#pragma once

#include <string>

namespace electra::apps {

class RunDirLock {
 public:
  // Creates `dir` if needed and takes its lock; throws UserError naming the directory and the
  // holder's PID when another process holds it. Then removes what a dead run left half-written
  // there (".checkpoint-*.tmp" directories, "*.tmp.<pid>" files), saying so on stderr: with the
  // lock held, no live process is writing them.
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace electra::apps
