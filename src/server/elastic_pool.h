#pragma once

#include <condition_variable>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace tau::server {

struct ElasticPoolOptions {
  // Threads kept waiting for work even when idle.
  size_t min_threads = 8;
  // Threads at most; past that, tasks wait in order for a free one.
  size_t max_threads = 4096;
  // Stack of each thread. The API's route regexes recurse once per byte of
  // the request path, so this bounds the path length it can take.
  size_t stack_bytes = size_t{2} << 20;
  // An idle thread above min_threads exits after this long.
  std::chrono::milliseconds idle_exit{30000};
};

// A thread pool that grows to serve every task at once (up to
// max_threads) and shrinks back when idle: a task that blocks for a long
// time (a followed log) never holds up the tasks queued behind it, as long
// as fewer than max_threads tasks run. Thread-safe.
class ElasticPool {
 public:
  explicit ElasticPool(ElasticPoolOptions options);
  // Shuts down (see Shutdown).
  ~ElasticPool();
  ElasticPool(const ElasticPool&) = delete;
  ElasticPool& operator=(const ElasticPool&) = delete;

  // Runs `task` on a pool thread, starting one when no thread is idle.
  void Enqueue(std::function<void()> task);
  // Lets the queued tasks run, then waits until every thread has exited.
  // Running tasks are not interrupted: they must end by themselves.
  void Shutdown();

  // Threads alive now, and the most that were alive at once.
  size_t threads() const;
  size_t peak_threads() const;
  // Tasks waiting for a thread.
  size_t queued() const;

 private:
  void Worker();
  // With mutex_ held: starts one more thread unless at max_threads.
  bool StartThreadLocked();

  const ElasticPoolOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable exited_;
  std::deque<std::function<void()>> tasks_;
  size_t threads_ = 0;
  size_t idle_ = 0;
  size_t peak_ = 0;
  bool shutdown_ = false;
};

}  // namespace tau::server
