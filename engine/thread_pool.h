// ThreadPool: the worker threads of the CPU path (a CPU Context owns one; kernels reach it through
// Context::parallel_for).
//
// parallel_for(tasks, fn) runs fn(i) exactly once for every i < tasks, on the calling thread and
// the workers, and returns when all have run. Which thread runs which task is not fixed, so the
// caller makes results independent of the thread count: the partition into tasks never depends on
// the number of threads, each task writes outputs no other task writes, and a reduction over
// tasks is combined by the caller in task order afterwards. Nothing is allocated per call (the
// callable is passed by address). A call from inside a task, a call while another thread is
// using the pool, or a pool of one thread runs the tasks inline, in order. If tasks throw, the
// exception of the lowest task index is rethrown on the caller (the same one at any thread count).
//
// A worker that finishes a job, and a caller waiting for the workers, spin for a short while
// before sleeping on the condition variable: a training step calls parallel_for hundreds of times
// back to back, and a sleep and wake-up per call costs tens of microseconds each time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace electra {

// The number of CPUs this process may run on (sched_getaffinity), at least 1.
int available_cores();

class ThreadPool {
 public:
  // `threads` >= 1: the calling thread plus threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  template <class F>
  void parallel_for(int64_t tasks, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    run(
        tasks, [](void* f, int64_t i) { (*static_cast<Fn*>(f))(i); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  struct Job {
    void (*call)(void*, int64_t);
    void* fn;
    int64_t tasks;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex error_mutex;
    int64_t error_task = -1;
    std::exception_ptr error;
  };

  void run(int64_t tasks, void (*call)(void*, int64_t), void* fn);
  static void work(Job& job);
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the thread whose job the pool runs
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  Job* job_ = nullptr;  // the current job, under mutex_
  // Written under mutex_; atomic so that a spinning thread may read them without it.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};  // workers inside the current job
  bool stop_ = false;
};

}  // namespace electra
