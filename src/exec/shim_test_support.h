#pragma once

// A folder of its own per test and tau-shim runs in it, with real
// processes: shared by the exec tests that start shims.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "exec/process_watcher.h"
#include "exec/shim_launcher.h"

namespace tau::exec {

// Gone, or a zombie nobody reaped yet (it holds nothing any more).
inline bool Gone(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return true;
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// Tells when one shim is gone.
class ShimExit {
 public:
  ShimExit()
      : watcher_([this](uint64_t) {
          std::lock_guard lock(mu_);
          gone_ = true;
          cv_.notify_all();
        }) {}
  Status Watch(int64_t pid) { return watcher_.Watch(1, pid); }
  // Waits for it; the bound only guards against a hang.
  bool Wait() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return gone_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool gone_ = false;
  ProcessWatcher watcher_;
};

class ShimFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tau-exec-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    for (int64_t pid : started_) ::kill(static_cast<pid_t>(pid), SIGKILL);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A shim that runs `argv` in the test's folder with `env` (and a PATH),
  // its log, status and lock there too.
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
    ShimExit exit;
    auto shim = LaunchShim(l);
    if (!shim.ok() || !exit.Watch(shim->pid).ok()) return false;
    return exit.Wait();
  }
  // Starts a shim and watches it (`exit` must outlive the wait).
  ShimProcess Start(const ShimLaunch& l, ShimExit* exit) {
    auto shim = LaunchShim(l);
    EXPECT_TRUE(shim.ok()) << shim.status().ToString();
    if (!shim.ok()) return {};
    EXPECT_TRUE(exit->Watch(shim->pid).ok());
    return *shim;
  }
  std::string ReadText(const std::string& name) {
    std::ifstream in(dir_ / name);
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }
  std::string Log() { return ReadText("rank-0.log"); }
  // Waits until the job writes a pid to `name` in its folder; the pid is
  // killed when the test ends.
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

  std::filesystem::path dir_;
  std::vector<int64_t> started_;  // killed when the test ends
};

}  // namespace tau::exec
