// tau-shim's status: written into space reserved before the job starts,
// retried when the write fails, and read back from the reservation. Real
// processes.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "exec/exit_status.h"
#include "exec/process_watcher.h"
#include "exec/shim_launcher.h"

namespace tau::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ShimStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tau-shim-status-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }
  ShimLaunch Launch(std::vector<std::string> argv, std::vector<std::string> env) {
    ShimLaunch l;
    l.shim_path = std::string(TAU_BIN_DIR) + "/tau-shim";
    l.argv = std::move(argv);
    l.env = std::move(env);
    l.env.push_back("PATH=/usr/bin:/bin");
    l.cwd = dir_.string();
    l.log_path = (dir_ / "rank-0.log").string();
    l.status_path = (dir_ / "status.json").string();
    l.lock_path = (dir_ / "lock").string();
    l.grace_ms = 200;
    return l;
  }
  // Runs a shim to its end; true when it ended.
  bool RunToEnd(const ShimLaunch& l) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    ProcessWatcher watcher([&](uint64_t) {
      std::lock_guard lock(mu);
      done = true;
      cv.notify_all();
    });
    auto shim = LaunchShim(l);
    if (!shim.ok() || !watcher.Watch(1, shim->pid).ok()) return false;
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; });  // a hang guard
  }
  std::string Log() {
    std::ifstream in(dir_ / "rank-0.log");
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }

  fs::path dir_;
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

}  // namespace
}  // namespace tau::exec
