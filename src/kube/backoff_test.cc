#include "kube/backoff.h"

#include <gtest/gtest.h>

namespace tau::kube {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DoublesUpToTheCapAndResets) {
  Backoff b({milliseconds(100), milliseconds(1000), 2.0, 0.0});
  std::vector<int64_t> got;
  for (int i = 0; i < 7; ++i) {
    got.push_back(b.Next().count());
  }
  EXPECT_EQ(got, (std::vector<int64_t>{100, 200, 400, 800, 1000, 1000, 1000}));
  EXPECT_EQ(b.attempt(), 7);
  b.Reset();
  EXPECT_EQ(b.Next().count(), 100);
}

TEST(BackoffTest, JitterStretchesWithinBoundsAndIsSeeded) {
  Backoff a({milliseconds(1000), milliseconds(8000), 2.0, 0.5}, 42);
  Backoff b({milliseconds(1000), milliseconds(8000), 2.0, 0.5}, 42);
  int64_t base = 1000;
  for (int i = 0; i < 6; ++i) {
    int64_t d = a.Next().count();
    EXPECT_EQ(d, b.Next().count());
    EXPECT_GE(d, base);
    EXPECT_LT(d, base + base / 2);
    base = std::min<int64_t>(base * 2, 8000);
  }
}

TEST(RealSleeperTest, WakeEndsSleepsAtOnce) {
  RealSleeper s;
  EXPECT_TRUE(s.Sleep(milliseconds(0)));
  s.Wake();
  // Would wait an hour if Wake() were lost.
  EXPECT_FALSE(s.Sleep(std::chrono::hours(1)));
}

}  // namespace
}  // namespace tau::kube
