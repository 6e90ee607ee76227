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

TEST(ProgressTest, TheRateStartsAgainAtEachAttempt) {
  Tracker t;
  t.Feed("{\"step\": 0, \"total_steps\": 100}\n", 0);
  t.Feed("{\"step\": 30}\n", 10'000);  // 3 steps/s, then the attempt fails
  ASSERT_DOUBLE_EQ(*t.snapshot().steps_per_second, 3.0);
  t.StartAttempt(40'000);  // 30 s later the next attempt resumes from step 25
  EXPECT_FALSE(t.snapshot().steps_per_second.has_value()) << "no rate before two lines of the new attempt";
  EXPECT_FALSE(t.snapshot().eta_seconds.has_value());
  t.Feed("{\"step\": 25}\n", 45'000);
  EXPECT_FALSE(t.snapshot().steps_per_second.has_value()) << "the last attempt's lines are not in the window";
  t.Feed("{\"step\": 35}\n", 55'000);
  EXPECT_DOUBLE_EQ(*t.snapshot().steps_per_second, 1.0) << "over the new attempt's lines only";
  EXPECT_DOUBLE_EQ(*t.snapshot().eta_seconds, 65.0);
}

TEST(ProgressTest, LinesDatedBeforeTheAttemptDoNotCount) {
  Tracker t;
  t.StartAttempt(100'000);
  // Dated by their "time" field: the first was written by the last attempt
  // but read only now.
  t.Feed("{\"step\": 90, \"time\": 50}\n{\"step\": 10, \"time\": 101}\n{\"step\": 20, \"time\": 106}\n", 200'000);
  EXPECT_DOUBLE_EQ(*t.snapshot().steps_per_second, 2.0);
}

TEST(ProgressTest, StepsGoingBackStartTheRateAgain) {
  Tracker t;
  t.Feed("{\"step\": 0}\n{\"step\": 50}\n", 0);
  t.Feed("{\"step\": 100}\n", 10'000);
  t.Feed("{\"step\": 40}\n", 20'000);  // restarted from a checkpoint
  EXPECT_FALSE(t.snapshot().steps_per_second.has_value());
  t.Feed("{\"step\": 60}\n", 30'000);
  EXPECT_DOUBLE_EQ(*t.snapshot().steps_per_second, 2.0);
}

TEST(ProgressTest, NoEtaWhileStalled) {
  Tracker t;
  t.Feed("{\"step\": 0, \"total_steps\": 100}\n", 0);
  t.Feed("{\"step\": 50}\n", 10'000);
  ASSERT_TRUE(t.snapshot().eta_seconds.has_value());
  t.SetStalled(true);
  EXPECT_FALSE(t.snapshot().eta_seconds.has_value());
  EXPECT_EQ(t.snapshot().percent, 50) << "progress itself is still shown";
  t.SetStalled(false);
  EXPECT_DOUBLE_EQ(*t.snapshot().eta_seconds, 10.0);
}

}  // namespace
}  // namespace tau::progress
