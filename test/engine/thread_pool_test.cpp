// ThreadPool (engine/thread_pool.h) and the CPU Context's threads: every task runs exactly once
// at any thread count, a nested call runs inline, the exception of the lowest task index is the
// one rethrown, and a context of 0 threads takes the cores the process may use.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/thread_pool.h"

using namespace electra;

TEST_CASE("parallel_for runs every task exactly once at 1 to 4 threads", "[threads]") {
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool pool(threads);
    CHECK(pool.threads() == threads);
    for (int64_t tasks : {0, 1, 3, 100, 1000}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
      pool.parallel_for(tasks, [&](int64_t i) {
        // A nested call runs inline on this thread.
        int64_t inner = 0;
        pool.parallel_for(3, [&](int64_t) { ++inner; });
        if (inner == 3) runs[static_cast<size_t>(i)].fetch_add(1);
      });
      int wrong = 0;
      for (const auto& r : runs) wrong += r.load() != 1;
      INFO(threads << " threads, " << tasks << " tasks");
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("parallel_for rethrows the exception of the lowest failing task", "[threads]") {
  for (int threads = 1; threads <= 3; ++threads) {
    ThreadPool pool(threads);
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(pool.parallel_for(64,
                                        [&](int64_t i) {
                                          ran.fetch_add(1);
                                          if (i % 10 == 7) {
                                            throw std::runtime_error("task " + std::to_string(i));
                                          }
                                        }),
                      "task 7");
    // The pool is usable afterwards.
    std::atomic<int64_t> sum{0};
    pool.parallel_for(10, [&](int64_t i) { sum.fetch_add(i); });
    CHECK(sum.load() == 45);
  }
}

TEST_CASE("a CPU context owns its threads; 0 means the cores this process may use", "[threads]") {
  CHECK(available_cores() >= 1);
  CHECK(Context::cpu().threads() == 1);
  CHECK(Context::cpu(0, Precision::F32, 3).threads() == 3);
  Context ctx = Context::cpu(0, Precision::F32, 0);
  CHECK(ctx.threads() == available_cores());
  ctx.set_threads(2);
  CHECK(ctx.threads() == 2);
  Context moved = std::move(ctx);
  CHECK(moved.threads() == 2);
  std::vector<int> seen(100, 0);
  moved.parallel_ranges(100, 7, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) ++seen[static_cast<size_t>(i)];
  });
  CHECK(std::count(seen.begin(), seen.end(), 1) == 100);
}
