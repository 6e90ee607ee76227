#include "cli/log_follow.h"

#include <gtest/gtest.h>

namespace tau::cli {
namespace {

TEST(LogFrameReaderTest, ShowsWholeFramesAndTracksThePosition) {
  std::string shown;
  LogFrameReader reader([&](std::string_view text) { shown.append(text); });
  const std::string stream = "6 1:6\nhello\n3 1:9,2\n[ra" "0 2:0\n";
  // Byte by byte: a frame shows only once it is whole.
  for (size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(reader.Feed(std::string_view(stream).substr(i, 1)));
    if (i == 5) {
      EXPECT_EQ(reader.position(), "");
    }
    if (i == 10) {
      EXPECT_EQ(shown, "");  // "hello" is in, its newline not yet
    }
  }
  EXPECT_EQ(shown, "hello\n[ra");
  EXPECT_EQ(reader.position(), "2:0");
}

TEST(LogFrameReaderTest, ACutFrameKeepsThePositionBeforeIt) {
  std::string shown;
  LogFrameReader reader([&](std::string_view text) { shown.append(text); });
  ASSERT_TRUE(reader.Feed("3 1:3\nab\n10 1:13\nxyz"));
  EXPECT_EQ(shown, "ab\n");
  EXPECT_EQ(reader.position(), "1:3");
}

TEST(LogFrameReaderTest, RefusesAStreamThatIsNotFramed) {
  LogFrameReader reader([](std::string_view) {});
  EXPECT_FALSE(reader.Feed("plain log line\n"));
}

}  // namespace
}  // namespace tau::cli
