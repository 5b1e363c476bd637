#include "engine/thread_pool.h"

#include <immintrin.h>
#include <sched.h>

#include <chrono>

#include "engine/error.h"

namespace electra {
namespace {

// True on a pool's worker and inside a task on the caller: a nested parallel_for runs inline.
thread_local bool tls_in_pool = false;

// How long a thread spins for the next job (a worker) or for the workers to finish (the caller)
// before it sleeps: longer than the gap between two parallel_for calls of a step.
constexpr auto kSpin = std::chrono::microseconds(100);

// Spins until ready() or kSpin has passed; true when ready() held.
template <class F>
bool spin_until(F ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    _mm_pause();
  }
  return true;
}

}  // namespace

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int count = CPU_COUNT(&set);
  return count > 0 ? count : 1;
}

ThreadPool::ThreadPool(int threads) {
  ELECTRA_CHECK(threads >= 1, "ThreadPool: ", threads, " threads");
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work(Job& job) {
  for (int64_t i = job.next.fetch_add(1); i < job.tasks; i = job.next.fetch_add(1)) {
    try {
      job.call(job.fn, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.error_mutex);
      if (job.error_task < 0 || i < job.error_task) {
        job.error_task = i;
        job.error = std::current_exception();
      }
    }
    job.done.fetch_add(1);
  }
}

void ThreadPool::run(int64_t tasks, void (*call)(void*, int64_t), void* fn) {
  if (tasks <= 0) return;
  std::unique_lock<std::mutex> busy(busy_, std::defer_lock);
  if (workers_.empty() || tasks == 1 || tls_in_pool || !busy.try_lock()) {
    for (int64_t i = 0; i < tasks; ++i) call(fn, i);
    return;
  }
  Job job;
  job.call = call;
  job.fn = fn;
  job.tasks = tasks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  wake_.notify_all();
  tls_in_pool = true;
  work(job);
  tls_in_pool = false;
  spin_until([&] { return job.done.load() == tasks && active_.load() == 0; });
  {
    // Workers join a job only while job_ points to it, so none touches `job` after this.
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return job.done.load() == tasks && active_ == 0; });
    job_ = nullptr;
  }
  if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::worker_loop() {
  tls_in_pool = true;
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  const auto has_work = [&] { return stop_ || (generation_ != seen && job_ != nullptr); };
  for (;;) {
    while (!has_work()) {
      lock.unlock();
      const bool woke = spin_until([&] { return generation_.load() != seen; });
      lock.lock();
      if (!woke) {
        wake_.wait(lock, has_work);
      } else if (job_ == nullptr) {
        seen = generation_;  // that job is over already (the caller ran all its tasks)
      }
    }
    if (stop_) return;
    seen = generation_;
    Job* job = job_;
    ++active_;
    lock.unlock();
    work(*job);
    lock.lock();
    --active_;
    if (active_ == 0) finished_.notify_one();
  }
}

}  // namespace electra
