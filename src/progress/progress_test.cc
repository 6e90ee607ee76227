#include "progress/progress.h"

#include <gtest/gtest.h>

namespace tau::progress {
namespace {

TEST(ProgressTest, StepsGiveProgressRateAndEta) {
  Tracker t;
  t.Feed("{\"step\": 10, \"total_steps\": 100, \"loss\": 0.9}\n", 1'000);
  EXPECT_EQ(t.snapshot().percent, 10);
  EXPECT_FALSE(t.snapshot().steps_per_second.has_value()) << "one point gives no rate";
  t.Feed("{\"step\": 30, \"loss\": 0.5}\n", 11'000);
  const Snapshot& s = t.snapshot();
  EXPECT_EQ(s.step, 30);
  EXPECT_EQ(s.percent, 30);
  EXPECT_DOUBLE_EQ(*s.steps_per_second, 2.0);
  EXPECT_DOUBLE_EQ(*s.eta_seconds, 35.0);
  EXPECT_EQ(s.latest.at("loss"), 0.5);
  EXPECT_EQ(s.last_line_ms, 11'000);
}

TEST(ProgressTest, PartialLinesWaitAndBadLinesAreCounted) {
  Tracker t;
  t.Feed("{\"step\": 1", 0);
  EXPECT_EQ(t.snapshot().lines, 0);
  t.Feed("}\nnot json\n[1,2]\n", 0);
  EXPECT_EQ(t.snapshot().lines, 1);
  EXPECT_EQ(t.snapshot().bad_lines, 2);
  EXPECT_EQ(t.snapshot().step, 1);
}

TEST(ProgressTest, ATimeFieldDatesTheLine) {
  Tracker t;
  t.Feed("{\"step\": 0, \"time\": 100}\n{\"step\": 50, \"time\": 110, \"total_steps\": 100}\n", 999'999'999);
  EXPECT_DOUBLE_EQ(*t.snapshot().steps_per_second, 5.0);
  EXPECT_EQ(t.snapshot().last_line_ms, 110'000);
  EXPECT_DOUBLE_EQ(*t.snapshot().eta_seconds, 10.0);
}

TEST(ProgressTest, TheRateFollowsTheLastMinute) {
  Tracker t;
  t.Feed("{\"step\": 0}\n", 0);
  t.Feed("{\"step\": 1000}\n", 10'000);     // fast at first
  t.Feed("{\"step\": 1010}\n", 100'000);    // then slow
  t.Feed("{\"step\": 1020}\n", 110'000);
  EXPECT_DOUBLE_EQ(*t.snapshot().steps_per_second, 1.0);
}

}  // namespace
}  // namespace tau::progress
