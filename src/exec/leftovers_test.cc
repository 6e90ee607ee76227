// What a killed tau-shim leaves behind, and how it is found and killed.
// Real processes.

#include "exec/leftovers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "exec/exit_status.h"
#include "exec/process_info.h"
#include "exec/process_watcher.h"
#include "exec/shim_launcher.h"

namespace tau::exec {
namespace {

namespace fs = std::filesystem;

// Gone, or a zombie nobody reaped yet (it holds nothing any more).
bool Gone(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return true;
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

class LeftoversTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tau-leftovers-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (int64_t pid : started_) ::kill(static_cast<pid_t>(pid), SIGKILL);
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
  int64_t ReadPid(const std::string& name) {
    for (int i = 0; i < 3000; ++i) {  // a hang guard, not a timing assertion
      std::ifstream in(dir_ / name);
      int64_t pid = 0;
      if (in >> pid && pid > 0) {
        started_.push_back(pid);
        return pid;
      }
      ::usleep(10000);
    }
    ADD_FAILURE() << "no " << name;
    return 0;
  }
  fs::path dir_;
  std::vector<int64_t> started_;
};

const std::vector<std::string> kAttemptEnv = {"TAU_JOB_ID=j_leftover01", "TAU_ATTEMPT=1", "TAU_WORKER_INDEX=0"};

TEST_F(LeftoversTest, AKilledShimsJobIsFoundAndKilledEvenOutsideItsSession) {
  // The job, and a process of it that left the shim's session.
  ShimLaunch l = Launch({"/bin/sh", "-c", "setsid sleep 1000 & echo $! > escaped; echo $$ > main; exec sleep 1000"},
                        kAttemptEnv);
  // Another attempt of the same job (as a retry would be): never touched.
  std::vector<std::string> other_env = {"TAU_JOB_ID=j_leftover01", "TAU_ATTEMPT=2", "TAU_WORKER_INDEX=0",
                                        "PATH=/usr/bin:/bin"};
  std::vector<char*> envp, argv;
  for (auto& e : other_env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sleep_path = "/bin/sleep", seconds = "1000";
  argv = {sleep_path.data(), seconds.data(), nullptr};
  pid_t other = 0;
  ASSERT_EQ(::posix_spawn(&other, "/bin/sleep", nullptr, nullptr, argv.data(), envp.data()), 0);
  started_.push_back(other);

  std::mutex mu;
  std::condition_variable cv;
  bool shim_gone = false;
  ProcessWatcher watcher([&](uint64_t) {
    std::lock_guard lock(mu);
    shim_gone = true;
    cv.notify_all();
  });
  auto shim = LaunchShim(l);
  ASSERT_TRUE(shim.ok()) << shim.status().ToString();
  ASSERT_TRUE(watcher.Watch(1, shim->pid).ok());
  const int64_t main = ReadPid("main");
  const int64_t escaped = ReadPid("escaped");

  auto record = ReadShimRecord(l.lock_path);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->pid, shim->pid);
  EXPECT_EQ(record->start_ticks, shim->start_ticks);
  EXPECT_EQ(record->boot_id, CurrentBootId());
  EXPECT_FALSE(record->boot_id.empty());

  ASSERT_EQ(::kill(static_cast<pid_t>(shim->pid), SIGKILL), 0);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return shim_gone; }));
  }
  EXPECT_FALSE(Gone(main)) << "without cgroups the job outlives a killed shim";
  EXPECT_FALSE(ReadExitStatus(l.status_path).ok());
  EXPECT_TRUE(StatusReserved(l.status_path)) << "the shim had started the job";

  AttemptProcesses attempt{record, kAttemptEnv, ""};
  Leftovers first = KillLeftovers(attempt);
  EXPECT_FALSE(first.rebooted);
  EXPECT_GE(first.alive, 2);
  Leftovers now = first;
  for (int i = 0; i < 3000 && now.alive > 0; ++i) {  // SIGKILL takes effect soon; a hang guard
    ::usleep(10000);
    now = KillLeftovers(attempt);
  }
  EXPECT_EQ(now.alive, 0);
  EXPECT_TRUE(Gone(main));
  EXPECT_TRUE(Gone(escaped));
  EXPECT_FALSE(Gone(other)) << "another attempt's process was killed";
}

TEST_F(LeftoversTest, AShimOfAnEarlierBootLeftNothing) {
  AttemptProcesses attempt{ShimRecord{::getpid(), 1, "another-boot"}, kAttemptEnv, ""};
  Leftovers left = KillLeftovers(attempt);
  EXPECT_TRUE(left.rebooted);
  EXPECT_EQ(left.alive, 0);
}

}  // namespace
}  // namespace tau::exec
