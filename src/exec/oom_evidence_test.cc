#include "exec/oom_evidence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

namespace tau::exec {
namespace {

using ::testing::HasSubstr;

TEST(OomEvidenceTest, ReadsTheKernelsOomKillCount) {
  const auto path = std::filesystem::temp_directory_path() / ("tau-vmstat-" + std::to_string(::getpid()));
  std::ofstream(path) << "nr_free_pages 1000\noom_kill 7\npgfault 3\n";
  EXPECT_EQ(ReadOomKillCount(path), 7);
  std::ofstream(path) << "pgoom_kill 9\nnr_free_pages 1000\noom_kill_x 2\n";  // only the whole key counts
  EXPECT_EQ(ReadOomKillCount(path), std::nullopt);
  std::ofstream(path) << "nr_free_pages 1000\n";  // a kernel before 4.13
  EXPECT_EQ(ReadOomKillCount(path), std::nullopt);
  std::filesystem::remove(path);
  EXPECT_EQ(ReadOomKillCount(path), std::nullopt);
}

TEST(OomEvidenceTest, TheLiveKernelsCountIsRead) {
  // Every kernel since 4.13 has the line; /proc/vmstat is longer than one
  // read(2) of a small buffer on some, which ReadProcFile handles.
  EXPECT_TRUE(ReadOomKillCount().has_value());
}

TEST(OomEvidenceTest, ASigkillWhileTheKernelsOomKillCountRoseIsAnOomKill) {
  OomClues c;
  c.signal = SIGKILL;
  c.kills_before = 3;
  c.kills_after = 4;
  c.peak_rss_kb = 1024;
  c.limit_bytes = int64_t{1} << 30;
  EXPECT_EQ(OomKillEvidence(c), "the kernel's OOM kill count (/proc/vmstat oom_kill) rose from 3 to 4 while it ran");
}

TEST(OomEvidenceTest, ASigkillAtItsMemoryLimitIsAnOomKill) {
  OomClues c;
  c.signal = SIGKILL;
  c.peak_rss_kb = 950 * 1024;
  c.limit_bytes = int64_t{1000} << 20;
  EXPECT_EQ(OomKillEvidence(c), "its peak RSS (950 MiB) reached 95% of its memory limit (1000 MiB)");
  c.kills_before = c.kills_after = 2;  // the count did not move: the RSS alone says so
  EXPECT_THAT(OomKillEvidence(c), HasSubstr("peak RSS"));
}

TEST(OomEvidenceTest, OtherEndsAreNot) {
  OomClues c;
  c.signal = SIGKILL;
  c.kills_before = c.kills_after = 5;
  c.peak_rss_kb = 100 * 1024;
  c.limit_bytes = int64_t{1000} << 20;
  EXPECT_EQ(OomKillEvidence(c), "") << "a kill -9 far from its limit";
  c.kills_after = 6;
  c.terminated_by = "signal";
  EXPECT_EQ(OomKillEvidence(c), "") << "TauGrid stopped it";
  c.terminated_by = "";
  c.signal = SIGSEGV;
  EXPECT_EQ(OomKillEvidence(c), "") << "the OOM killer sends SIGKILL only";
}

}  // namespace
}  // namespace tau::exec
