// The gate around job-list page builds: however many requests come at once,
// no more than the bound build at once, every request is let in in the end
// (none refused), and the heap is trimmed when the last build ends.

#include "server/page_build_gate.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tau::server {
namespace {

TEST(PageBuildGateTest, ManyConcurrentBuildsRunAtMostTheBoundAtOnceAndAllFinish) {
  constexpr size_t kBound = 3;
  constexpr int kRequests = 40;
  std::atomic<int> idle_calls{0};
  PageBuildGate gate(kBound, [&] { idle_calls.fetch_add(1); });

  // Each build holds its slot until the test opens `release`, so the gate
  // is seen full with the rest waiting.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int finished = 0;
  std::atomic<size_t> most_seen_inside{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&] {
      PageBuildGate::Slot slot = gate.Enter();
      size_t now = gate.inside();
      size_t seen = most_seen_inside.load();
      while (now > seen && !most_seen_inside.compare_exchange_weak(seen, now)) {
      }
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
      ++finished;
    });
  }
  // Wait (by state, not by time) until the gate is full and the rest wait.
  while (!(gate.inside() == kBound && gate.waiting() == kRequests - kBound)) {
    std::this_thread::yield();
  }
  EXPECT_EQ(idle_calls.load(), 0);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();

  EXPECT_EQ(finished, kRequests);
  EXPECT_EQ(gate.peak(), kBound);
  EXPECT_LE(most_seen_inside.load(), kBound);
  EXPECT_EQ(gate.inside(), 0u);
  EXPECT_EQ(gate.waiting(), 0u);
  EXPECT_GE(idle_calls.load(), 1);
}

TEST(PageBuildGateTest, TheIdleHookRunsOnlyWhenTheLastBuildEnds) {
  int idle_calls = 0;
  PageBuildGate gate(2, [&] { ++idle_calls; });
  {
    PageBuildGate::Slot a = gate.Enter();
    {
      PageBuildGate::Slot b = gate.Enter();
      EXPECT_EQ(gate.inside(), 2u);
    }
    EXPECT_EQ(idle_calls, 0);
  }
  EXPECT_EQ(idle_calls, 1);
  EXPECT_EQ(gate.peak(), 2u);
}

TEST(PageBuildGateTest, TheDaemonsBoundIsTheCoreCountAndAtLeastTwo) {
  EXPECT_GE(PageBuildGate::DefaultBound(), 2u);
  EXPECT_GE(PageBuildGate::DefaultBound(), static_cast<size_t>(std::thread::hardware_concurrency()));
  EXPECT_EQ(PageBuildGate(0).bound(), 1u);
}

#if defined(__GLIBC__)
// How many arenas malloc has made, from malloc_info's report.
int MallocArenas() {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  malloc_info(0, out);
  std::fclose(out);
  const std::string report(text, size);
  std::free(text);
  int heaps = 0;
  for (size_t at = report.find("<heap nr="); at != std::string::npos; at = report.find("<heap nr=", at + 1)) {
    ++heaps;
  }
  return heaps;
}

// Threads that each allocate at once; with arenas uncapped glibc gives
// contending threads arenas of their own.
int ArenasAfterConcurrentAllocations(size_t cap) {
  CapMallocArenas(cap);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < 6) {
        std::this_thread::yield();
      }
      std::vector<void*> blocks;
      for (int j = 0; j < 2000; ++j) blocks.push_back(std::malloc(256));
      for (void* b : blocks) std::free(b);
    });
  }
  for (auto& t : threads) t.join();
  return MallocArenas();
}

TEST(CapMallocArenasTest, MallocMakesNoMoreArenasThanTheCap) {
  // In a fresh process, so that no arena made by an earlier test counts.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ::unsetenv("MALLOC_ARENA_MAX");
  EXPECT_EXIT(std::exit(ArenasAfterConcurrentAllocations(1) == 1 ? 0 : 1), ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace tau::server
