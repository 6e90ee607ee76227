// tau-shim's status: written into space reserved before the job starts,
// retried when the write fails, and read back from the reservation. Real
// processes.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "exec/exit_status.h"
#include "exec/shim_test_support.h"

namespace tau::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ShimStatusTest : public ShimFolderTest {
 protected:
  void TearDown() override {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    ShimFolderTest::TearDown();
  }
  bool mounted_ = false;
};

TEST_F(ShimStatusTest, AJobThatFillsTheDiskStillHasItsEndRecorded) {
  // A 128 KiB file system of its own (CI runs as root; elsewhere this
  // needs root and says so).
  if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=128k") != 0) {
    GTEST_SKIP() << "mounting a small tmpfs needs root: " << std::strerror(errno);
  }
  mounted_ = true;
  ShimLaunch l = Launch({"/bin/sh", "-c", "dd if=/dev/zero of=fill bs=4k 2>/dev/null; exit 5"}, {});
  l.status_retry_ms = 500;
  ASSERT_TRUE(RunToEnd(l));
  std::error_code ec;
  EXPECT_EQ(fs::space(dir_, ec).available, 0u) << "the job did fill the disk";
  auto status = ReadExitStatus(l.status_path);
  ASSERT_TRUE(status.ok()) << status.status().ToString() << "\n" << Log();
  EXPECT_EQ(status->exit_code, 5);
}

TEST_F(ShimStatusTest, AFailingStatusWriteIsRetried) {
  ShimLaunch l = Launch({"/bin/sh", "-c", "exit 4"}, {});
  l.fail_status_writes = 2;
  ASSERT_TRUE(RunToEnd(l));
  auto status = ReadExitStatus(l.status_path);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->exit_code, 4);
  EXPECT_THAT(Log(), HasSubstr("(try 2): No space left on device"));
  EXPECT_FALSE(fs::exists(l.status_path + ".tmp"));
}

TEST_F(ShimStatusTest, AStatusThatCannotBeWrittenLeavesItsReservation) {
  ShimLaunch l = Launch({"/bin/sh", "-c", "exit 0"}, {});
  l.fail_status_writes = 1000;
  l.status_retry_ms = 300;
  ASSERT_TRUE(RunToEnd(l));
  auto status = ReadExitStatus(l.status_path);
  EXPECT_EQ(status.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StatusReserved(l.status_path)) << "the job ran: its end is unknown, not never started";
}

TEST_F(ShimStatusTest, AShimRetryingItsStatusEndsOnSigterm) {
  // The job has ended and the write keeps failing: a stop signal ends the
  // retrying (after one more try) instead of leaving a shim behind for
  // --status-retry-ms.
  ShimLaunch l = Launch({"/bin/sh", "-c", "exit 0"}, {});
  l.fail_status_writes = 1000000;
  l.status_retry_ms = 600000;
  ShimExit exit;
  ShimProcess shim = Start(l, &exit);
  for (int i = 0; i < 3000 && Log().find("(try 2)") == std::string::npos; ++i) ::usleep(10000);
  ASSERT_THAT(Log(), HasSubstr("(try 2)"));
  ::kill(static_cast<pid_t>(shim.pid), SIGTERM);
  ASSERT_TRUE(exit.Wait()) << "the shim kept retrying after SIGTERM\n" << Log();
  EXPECT_THAT(Log(), HasSubstr("stopped by a signal; the status is not written"));
  EXPECT_TRUE(StatusReserved(l.status_path)) << "its end stays unknown, not never started";
}

TEST_F(ShimStatusTest, AShimStoppedWhileItsJobRanRetriesItsStatusBriefly) {
  // The stop came first (a cancel): the write that then fails is tried for
  // a moment, not for --status-retry-ms.
  ShimLaunch l = Launch({"/bin/sh", "-c", "echo $$ > job.pid; exec sleep 60"}, {});
  l.fail_status_writes = 1000000;
  l.status_retry_ms = 600000;
  ShimExit exit;
  ShimProcess shim = Start(l, &exit);
  ReadPid("job.pid");
  ::kill(static_cast<pid_t>(shim.pid), SIGTERM);
  ASSERT_TRUE(exit.Wait()) << "the shim kept retrying after the stop\n" << Log();
  EXPECT_THAT(Log(), HasSubstr("cannot write"));
}

TEST_F(ShimStatusTest, AShimWhoseStatusFolderIsGoneStopsRetrying) {
  // The attempt's folder was removed while the job ran: no write can
  // succeed, so the shim does not wait out --status-retry-ms.
  fs::create_directories(dir_ / "attempt");
  ShimLaunch l = Launch({"/bin/sh", "-c", "rm -rf attempt; exit 0"}, {});
  l.status_path = (dir_ / "attempt" / "status.json").string();
  l.status_retry_ms = 600000;
  ASSERT_TRUE(RunToEnd(l)) << "the shim kept retrying into a folder that is gone\n" << Log();
  EXPECT_THAT(Log(), HasSubstr("is gone; the status is not written"));
}

TEST_F(ShimStatusTest, AStatusLeftInTheReservationIsRead) {
  // The shim wrote the whole status but could not rename it.
  std::ofstream(dir_ / "status.json.tmp") << "{\"version\":1,\"exit_code\":3,\"signal\":null}\n      \n";
  auto status = ReadExitStatus((dir_ / "status.json").string());
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->exit_code, 3);
  // Blanks only: reserved, but no status.
  std::ofstream(dir_ / "status.json.tmp", std::ios::trunc) << std::string(4095, ' ') << "\n";
  EXPECT_EQ(ReadExitStatus((dir_ / "status.json").string()).status().code(), StatusCode::kNotFound);
}

TEST_F(ShimStatusTest, StatusFilesThatAreNotRegularFilesAreNamed) {
  const std::string path = (dir_ / "status.json").string();
  ASSERT_EQ(::mkfifo((path + ".tmp").c_str(), 0644), 0);
  auto status = ReadExitStatus(path);
  EXPECT_EQ(status.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.status().message(), HasSubstr("status file " + path + ".tmp is not a regular file (a fifo)"));
  EXPECT_TRUE(StatusReserved(path)) << "something is there: the job may have run";

  ASSERT_EQ(::symlink("/etc/hostname", path.c_str()), 0);
  status = ReadExitStatus(path);
  EXPECT_EQ(status.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.status().message(), HasSubstr("status file " + path + " is not a regular file (a symbolic link)"));
  fs::remove(path);
  fs::create_directory(path);
  EXPECT_THAT(ReadExitStatus(path).status().message(), HasSubstr("is not a regular file (a folder)"));
}

TEST_F(ShimStatusTest, ANonRegularFileWhereTheReservationGoesKeepsTheJobFromStartingAndIsNamed) {
  ShimLaunch l = Launch({"/bin/sh", "-c", "echo > ran"}, {});
  ASSERT_EQ(::mkfifo((l.status_path + ".tmp").c_str(), 0644), 0);
  ASSERT_TRUE(RunToEnd(l)) << "the shim never blocks on a fifo";
  EXPECT_FALSE(fs::exists(dir_ / "ran")) << "a job whose end could not be recorded was started";
  EXPECT_THAT(Log(), HasSubstr("not starting the job: the status reservation " + l.status_path +
                               ".tmp is not a regular file (a fifo)"));
  auto status = ReadExitStatus(l.status_path);
  EXPECT_EQ(status.status().code(), StatusCode::kInvalidArgument) << "not an error of the job's setup";
  EXPECT_THAT(status.status().message(), HasSubstr(".tmp is not a regular file (a fifo)"));
}

TEST_F(ShimStatusTest, TheReservationNeverFollowsALink) {
  std::ofstream(dir_ / "precious") << "keep\n";
  ShimLaunch l = Launch({"/bin/sh", "-c", "echo > ran"}, {});
  ASSERT_EQ(::symlink((dir_ / "precious").c_str(), (l.status_path + ".tmp").c_str()), 0);
  ASSERT_TRUE(RunToEnd(l));
  EXPECT_EQ(ReadText("precious"), "keep\n");
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
  EXPECT_THAT(ReadExitStatus(l.status_path).status().message(), HasSubstr("is not a regular file (a symbolic link)"));
}

TEST_F(ShimStatusTest, AReservationTheJobReplacedStillGetsItsEndRecorded) {
  ShimLaunch l = Launch({"/bin/sh", "-c", "rm status.json.tmp; mkfifo status.json.tmp; exit 7"}, {});
  ASSERT_TRUE(RunToEnd(l));
  auto status = ReadExitStatus(l.status_path);
  ASSERT_TRUE(status.ok()) << status.status().ToString() << "\n" << Log();
  EXPECT_EQ(status->exit_code, 7);
  EXPECT_FALSE(fs::exists(l.status_path + ".tmp"));
}

}  // namespace
}  // namespace tau::exec
