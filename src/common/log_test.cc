#include "common/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace tau::log {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Captures what the logger writes through a pipe.
std::string Capture(Format format, Level min, void (*emit)()) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  Configure(min, format, fds[1]);
  emit();
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  Configure(Level::kInfo, Format::kLogfmt, 2);
  return out;
}

TEST(LogTest, LogfmtQuotesOnlyWhenNeeded) {
  std::string out = Capture(Format::kLogfmt, Level::kInfo, [] {
    Info("server", "listening", {{"port", "8080"}, {"path", "/tmp/a b"}});
  });
  EXPECT_THAT(out, StartsWith("time="));
  EXPECT_THAT(out, HasSubstr(" level=info component=server msg=listening port=8080 path=\"/tmp/a b\"\n"));
}

TEST(LogTest, JsonLinesAreEscaped) {
  std::string out = Capture(Format::kJson, Level::kInfo, [] {
    Warn("exec", "job said \"hi\"\n", {{"job", "j_1"}});
  });
  EXPECT_THAT(out, HasSubstr("\"level\":\"warn\",\"component\":\"exec\",\"msg\":\"job said \\\"hi\\\"\\n\",\"job\":\"j_1\"}\n"));
}

TEST(LogTest, LinesCarryTheCurrentTraceId) {
  std::string json = Capture(Format::kJson, Level::kInfo, [] {
    TraceScope scope("0123456789abcdef");
    Info("api", "handled");
  });
  EXPECT_THAT(json, HasSubstr("\"msg\":\"handled\",\"trace_id\":\"0123456789abcdef\"}"));
  std::string logfmt = Capture(Format::kLogfmt, Level::kInfo, [] {
    {
      TraceScope scope("feedfacefeedface");
      Info("api", "inside");
    }
    Info("api", "outside");
  });
  EXPECT_THAT(logfmt, HasSubstr("msg=inside trace_id=feedfacefeedface\n"));
  EXPECT_THAT(logfmt, HasSubstr("msg=outside\n"));
  EXPECT_EQ(NewTraceId().size(), 16u);
}

TEST(LogTest, LevelsBelowTheMinimumAreDropped) {
  std::string out = Capture(Format::kLogfmt, Level::kWarn, [] {
    Debug("a", "debug");
    Info("a", "info");
    Error("a", "boom");
  });
  EXPECT_THAT(out, ::testing::Not(HasSubstr("msg=info")));
  EXPECT_THAT(out, HasSubstr("msg=boom"));
  Level level;
  EXPECT_TRUE(ParseLevel("debug", &level));
  EXPECT_EQ(level, Level::kDebug);
  EXPECT_FALSE(ParseLevel("verbose", &level));
}

}  // namespace
}  // namespace tau::log
