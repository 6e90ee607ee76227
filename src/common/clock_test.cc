#include "common/clock.h"

#include <gtest/gtest.h>

namespace tau {
namespace {

TEST(ClockTest, FakeClockMovesOnlyWhenTold) {
  FakeClock clock;
  auto wall = clock.Now();
  auto mono = clock.Monotonic();
  EXPECT_EQ(clock.Now(), wall);
  clock.Advance(std::chrono::seconds(90));
  EXPECT_EQ(clock.Now() - wall, std::chrono::seconds(90));
  EXPECT_EQ(clock.Monotonic() - mono, std::chrono::seconds(90));
}

TEST(ClockTest, Rfc3339InUtcWithMilliseconds) {
  FakeClock clock;
  EXPECT_EQ(FormatRfc3339(clock.Now()), "2026-01-01T00:00:00.000Z");
  clock.Advance(std::chrono::milliseconds(3723004));
  EXPECT_EQ(FormatRfc3339(clock.Now()), "2026-01-01T01:02:03.004Z");
}

}  // namespace
}  // namespace tau
