#include "server/elastic_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

namespace tau::server {
namespace {

// Tasks that block until released, like followed logs.
struct Gate {
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
};

TEST(ElasticPoolTest, ManyBlockedTasksDoNotHoldUpANewOne) {
  ElasticPool pool({.min_threads = 4, .max_threads = 1000});
  Gate gate;
  std::atomic<int> started{0};
  for (int i = 0; i < 200; ++i) {
    pool.Enqueue([&] {
      ++started;
      gate.opened.wait();
    });
  }
  // A short task queued behind 200 blocked ones still runs.
  std::promise<void> ran;
  pool.Enqueue([&] { ran.set_value(); });
  ran.get_future().wait();
  EXPECT_GE(pool.peak_threads(), 201u);
  gate.open.set_value();
  pool.Shutdown();
  EXPECT_EQ(started.load(), 200);
  EXPECT_EQ(pool.threads(), 0u);
}

TEST(ElasticPoolTest, AtMaxThreadsTasksWaitForAFreeThreadAndAllRun) {
  ElasticPool pool({.min_threads = 0, .max_threads = 2});
  Gate gate;
  std::vector<int> order;
  std::mutex mu;
  std::atomic<int> blocked{0};
  for (int i = 0; i < 2; ++i) {
    pool.Enqueue([&] {
      ++blocked;
      gate.opened.wait();
    });
  }
  while (blocked.load() < 2) std::this_thread::yield();
  for (int i = 0; i < 5; ++i) {
    pool.Enqueue([&, i] {
      std::lock_guard lock(mu);
      order.push_back(i);
    });
  }
  EXPECT_EQ(pool.queued(), 5u);
  EXPECT_LE(pool.threads(), 2u);
  gate.open.set_value();
  pool.Shutdown();
  ASSERT_EQ(order.size(), 5u);
  EXPECT_LE(pool.peak_threads(), 2u);
}

TEST(ElasticPoolTest, IdleThreadsAboveTheMinimumExit) {
  ElasticPool pool({.min_threads = 1, .max_threads = 50, .idle_exit = std::chrono::milliseconds(1)});
  Gate gate;
  std::atomic<int> started{0};
  for (int i = 0; i < 20; ++i) {
    pool.Enqueue([&] {
      ++started;
      gate.opened.wait();
    });
  }
  while (started.load() < 20) std::this_thread::yield();
  EXPECT_GE(pool.threads(), 20u);
  gate.open.set_value();
  while (pool.threads() > 1) std::this_thread::yield();
  EXPECT_EQ(pool.threads(), 1u);
}

}  // namespace
}  // namespace tau::server
