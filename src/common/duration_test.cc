#include "common/duration.h"

#include <gtest/gtest.h>

namespace tau {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(DurationTest, ParsesGoStyleTerms) {
  EXPECT_EQ(*ParseDuration("30s"), seconds(30));
  EXPECT_EQ(*ParseDuration("5m"), minutes(5));
  EXPECT_EQ(*ParseDuration("1h30m"), minutes(90));
  EXPECT_EQ(*ParseDuration("1.5h"), minutes(90));
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("7d"), hours(24 * 7));
  EXPECT_EQ(*ParseDuration("0"), milliseconds(0));
  EXPECT_EQ(*ParseDuration("0s"), milliseconds(0));
  EXPECT_EQ(*ParseDuration("1m0.5s"), milliseconds(60500));
}

TEST(DurationTest, RejectsWithTheReason) {
  EXPECT_NE(ParseDuration("").error().message().find("empty"), std::string::npos);
  EXPECT_NE(ParseDuration("30").error().message().find("missing unit"), std::string::npos);
  EXPECT_FALSE(ParseDuration("5 min").ok());
  EXPECT_NE(ParseDuration("5min").error().message().find("unknown unit \"min\""), std::string::npos);
  EXPECT_NE(ParseDuration("-5s").error().message().find("negative"), std::string::npos);
  EXPECT_NE(ParseDuration("0.0001s").error().message().find("finer"), std::string::npos);
  EXPECT_NE(ParseDuration("h").error().message().find("number"), std::string::npos);
  EXPECT_NE(ParseDuration("999999999999999999d").error().message().find("too large"), std::string::npos);
}

TEST(DurationTest, FormatsBackToParseableText) {
  for (std::string_view text : {"30s", "1h30m", "7d", "1m500ms", "250ms", "2d3h4m5s"}) {
    EXPECT_EQ(FormatDuration(*ParseDuration(text)), text);
  }
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
}

TEST(DurationTest, ShortFormKeepsTwoUnits) {
  EXPECT_EQ(FormatDurationShort(milliseconds(900)), "900ms");
  EXPECT_EQ(FormatDurationShort(seconds(42)), "42s");
  EXPECT_EQ(FormatDurationShort(seconds(252)), "4m12s");
  EXPECT_EQ(FormatDurationShort(minutes(125)), "2h5m");
  EXPECT_EQ(FormatDurationShort(hours(76)), "3d4h");
}

}  // namespace
}  // namespace tau
