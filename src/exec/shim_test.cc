// tau-shim through the launcher and the process watcher, with real
// processes.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
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
using ::testing::HasSubstr;

// Collects exit notifications from a ProcessWatcher.
class Exits {
 public:
  Exits() : watcher_([this](uint64_t token) {
      std::lock_guard lock(mu_);
      done_.insert(token);
      cv_.notify_all();
    }) {}
  ProcessWatcher& watcher() { return watcher_; }
  // Waits (up to a generous bound that only guards against hangs).
  bool WaitFor(uint64_t token) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return done_.count(token) > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<uint64_t> done_;
  ProcessWatcher watcher_;
};

class ShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tau-shim-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ShimLaunch Launch(std::vector<std::string> argv) {
    ShimLaunch l;
    l.shim_path = std::string(TAU_BIN_DIR) + "/tau-shim";
    l.argv = std::move(argv);
    l.env = {"PATH=/usr/bin:/bin", "GREETING=hello"};
    l.cwd = dir_.string();
    l.log_path = (dir_ / "rank-0.log").string();
    l.status_path = (dir_ / "status.json").string();
    l.lock_path = (dir_ / "lock").string();
    l.grace_ms = 200;
    return l;
  }
  std::string Log() {
    std::ifstream in(dir_ / "rank-0.log");
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }
  ExitStatus RunToEnd(const ShimLaunch& l, Exits* exits) {
    auto shim = LaunchShim(l);
    EXPECT_TRUE(shim.ok()) << shim.status().ToString();
    EXPECT_TRUE(exits->watcher().Watch(1, shim->pid).ok());
    EXPECT_TRUE(exits->WaitFor(1));
    auto status = ReadExitStatus(l.status_path);
    EXPECT_TRUE(status.ok()) << status.status().ToString();
    return status.ok() ? *status : ExitStatus{};
  }

  fs::path dir_;
};

TEST_F(ShimTest, RunsInItsFolderWithItsEnvironmentAndRecordsTheExitCode) {
  Exits exits;
  ExitStatus s = RunToEnd(Launch({"/bin/sh", "-c", "echo $GREETING; pwd; echo oops >&2; exit 7"}), &exits);
  EXPECT_EQ(s.exit_code, 7);
  EXPECT_EQ(s.signal, std::nullopt);
  EXPECT_EQ(s.terminated_by, "");
  EXPECT_GT(s.finished_at_ms, 0);
  EXPECT_EQ(Log(), "hello\n" + dir_.string() + "\noops\n");
}

TEST_F(ShimTest, MissingProgramExits127WithTheReasonInTheLog) {
  Exits exits;
  ExitStatus s = RunToEnd(Launch({"/nonexistent/program"}), &exits);
  EXPECT_EQ(s.exit_code, 127);
  EXPECT_THAT(Log(), HasSubstr("cannot run /nonexistent/program: No such file or directory"));
}

TEST_F(ShimTest, TerminateGivesTheGracePeriodThenKills) {
  Exits exits;
  // Traps TERM and exits cleanly: ends by itself within the grace period.
  ShimLaunch polite = Launch({"/bin/sh", "-c", "trap 'echo saving; exit 0' TERM; echo ready; while :; do sleep 0.05; done"});
  auto shim = LaunchShim(polite);
  ASSERT_TRUE(shim.ok());
  ASSERT_TRUE(exits.watcher().Watch(1, shim->pid).ok());
  while (Log().find("ready") == std::string::npos) ::usleep(10000);
  ASSERT_TRUE(TerminateShim(*shim).ok());
  ASSERT_TRUE(exits.WaitFor(1));
  ExitStatus s = *ReadExitStatus(polite.status_path);
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(s.terminated_by, "signal");
  EXPECT_THAT(Log(), HasSubstr("saving"));
}

TEST_F(ShimTest, IgnoringSigtermEndsInSigkill) {
  Exits exits;
  ShimLaunch stubborn = Launch({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"});
  auto shim = LaunchShim(stubborn);
  ASSERT_TRUE(shim.ok());
  ASSERT_TRUE(exits.watcher().Watch(1, shim->pid).ok());
  while (Log().find("ready") == std::string::npos) ::usleep(10000);
  ASSERT_TRUE(TerminateShim(*shim).ok());
  ASSERT_TRUE(exits.WaitFor(1));
  ExitStatus s = *ReadExitStatus(stubborn.status_path);
  EXPECT_EQ(s.signal, 9);
  EXPECT_EQ(s.terminated_by, "signal");
}

TEST_F(ShimTest, DeadlineStopsTheWorkload) {
  Exits exits;
  ShimLaunch l = Launch({"/bin/sh", "-c", "sleep 30"});
  l.deadline_ms = 100;
  ExitStatus s = RunToEnd(l, &exits);
  EXPECT_EQ(s.terminated_by, "deadline");
  EXPECT_EQ(s.signal, 15);
}

TEST_F(ShimTest, ProcessesThatLeftTheSessionEndWithTheJob) {
  Exits exits;
  // A daemon: double fork and setsid, so neither the job's process group
  // nor its parent holds it any more.
  ExitStatus s = RunToEnd(
      Launch({"/bin/sh", "-c",
              "( setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' & ); "
              "while [ ! -s daemon.pid ]; do sleep 0.01; done; exit 3"}),
      &exits);
  EXPECT_EQ(s.exit_code, 3);
  std::ifstream in(dir_ / "daemon.pid");
  pid_t daemon = 0;
  in >> daemon;
  ASSERT_GT(daemon, 0);
  // The shim killed and reaped it before it wrote the status.
  EXPECT_EQ(::kill(daemon, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(ShimTest, StoppingAlsoAsksProcessesThatLeftTheGroup) {
  Exits exits;
  ShimLaunch l = Launch({"/bin/sh", "-c",
                         "setsid sh -c \"trap 'echo daemon saved; exit 0' TERM; echo daemon ready; "
                         "while :; do sleep 0.02; done\" & while :; do sleep 0.02; done"});
  l.grace_ms = 5000;
  auto shim = LaunchShim(l);
  ASSERT_TRUE(shim.ok());
  ASSERT_TRUE(exits.watcher().Watch(1, shim->pid).ok());
  while (Log().find("daemon ready") == std::string::npos) ::usleep(10000);
  ASSERT_TRUE(TerminateShim(*shim).ok());
  ASSERT_TRUE(exits.WaitFor(1));
  EXPECT_EQ(ReadExitStatus(l.status_path)->signal, 15);
  EXPECT_THAT(Log(), HasSubstr("daemon saved"));
}

TEST_F(ShimTest, TerminateContinuesAShimItsJobStopped) {
  Exits exits;
  // The job stops its own shim (the leader of its session).
  ShimLaunch l = Launch({"/bin/sh", "-c", "kill -STOP $(ps -o sid= -p $$); echo ready; exec sleep 30"});
  auto shim = LaunchShim(l);
  ASSERT_TRUE(shim.ok());
  ASSERT_TRUE(exits.watcher().Watch(1, shim->pid).ok());
  while (Log().find("ready") == std::string::npos) ::usleep(10000);
  ASSERT_TRUE(TerminateShim(*shim).ok());
  ASSERT_TRUE(exits.WaitFor(1)) << "the stopped shim never acted on SIGTERM";
  auto status = ReadExitStatus(l.status_path);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->terminated_by, "signal");
}

TEST_F(ShimTest, KillShimKillsAShimThatDoesNotStop) {
  Exits exits;
  ShimLaunch l = Launch({"/bin/sh", "-c", "echo $$ > main; echo ready; exec sleep 30"});
  auto shim = LaunchShim(l);
  ASSERT_TRUE(shim.ok());
  ASSERT_TRUE(exits.watcher().Watch(1, shim->pid).ok());
  while (Log().find("ready") == std::string::npos) ::usleep(10000);
  pid_t main = 0;
  std::ifstream(dir_ / "main") >> main;
  ASSERT_GT(main, 0);
  ASSERT_EQ(::kill(static_cast<pid_t>(shim->pid), SIGSTOP), 0);
  ASSERT_TRUE(KillShim(*shim).ok());
  ASSERT_TRUE(exits.WaitFor(1));
  EXPECT_FALSE(ProcessIsAlive(shim->pid, shim->start_ticks));
  EXPECT_TRUE(KillShim(*shim).ok()) << "a shim that is gone is not an error";
  // Its job outlives it (no cgroup): what the daemon's sweep is for.
  EXPECT_EQ(::kill(main, SIGKILL), 0);
}

TEST_F(ShimTest, TheLockTellsWhetherTheShimIsAlive) {
  Exits exits;
  ShimLaunch l = Launch({"/bin/sh", "-c", "echo ready; sleep 30"});
  auto shim = LaunchShim(l);
  ASSERT_TRUE(shim.ok());
  ASSERT_TRUE(exits.watcher().Watch(1, shim->pid).ok());
  while (Log().find("ready") == std::string::npos) ::usleep(10000);
  EXPECT_EQ(AttemptLockHolder(l.lock_path), shim->pid);
  EXPECT_TRUE(ProcessIsAlive(shim->pid, shim->start_ticks));
  auto again = LaunchShim(l);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(TerminateShim(*shim).ok());
  ASSERT_TRUE(exits.WaitFor(1));
  EXPECT_EQ(AttemptLockHolder(l.lock_path), std::nullopt);
  EXPECT_FALSE(ProcessIsAlive(shim->pid, shim->start_ticks));
}

TEST_F(ShimTest, TheWorkloadInheritsNoDescriptors) {
  int leaked = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC, like an accepted socket
  ASSERT_GE(leaked, 3);
  Exits exits;
  ExitStatus s = RunToEnd(Launch({"/bin/sh", "-c", "ls /proc/$$/fd"}), &exits);
  ::close(leaked);
  EXPECT_EQ(s.exit_code, 0);
  // The shell itself may hold one descriptor for the script; nothing else.
  std::istringstream fds(Log());
  std::set<int> open_fds;
  for (std::string fd; fds >> fd;) open_fds.insert(std::stoi(fd));
  for (int fd : open_fds) EXPECT_LE(fd, 3) << "descriptor " << fd << " leaked into the job";
  EXPECT_EQ(open_fds.count(leaked), leaked > 3 ? 0u : open_fds.count(leaked));
}

TEST_F(ShimTest, WatchingAProcessThatIsGoneReportsAtOnce) {
  Exits exits;
  ASSERT_TRUE(exits.watcher().Watch(5, 999999999).ok());
  EXPECT_TRUE(exits.WaitFor(5));
}

TEST(ExitStatusTest, ParsesAndRejects) {
  auto s = ParseExitStatus(R"({"version":1,"exit_code":null,"signal":9,"terminated_by":"deadline","max_rss_kb":12})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->signal, 9);
  EXPECT_EQ(s->exit_code, std::nullopt);
  EXPECT_EQ(s->max_rss_kb, 12);
  EXPECT_FALSE(ParseExitStatus("{not json").ok());
  EXPECT_EQ(ReadExitStatus("/nonexistent/status.json").error().code(), StatusCode::kNotFound);
}

// The status file lies in the job's folder: a job that swaps it for a fifo
// or a link must not block the daemon or point it at another file.
TEST(ExitStatusTest, AFifoOrLinkInPlaceOfTheStatusIsRefusedWithoutBlocking) {
  auto dir = std::filesystem::temp_directory_path() / ("tau-status-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string fifo = (dir / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(ReadExitStatus(fifo).ok());  // returns at once: no writer is ever opened
  std::string real = (dir / "real.json").string();
  std::ofstream(real) << R"({"version":1,"exit_code":0})";
  std::string link = (dir / "link.json").string();
  std::filesystem::create_symlink(real, link);
  EXPECT_TRUE(ReadExitStatus(real).ok());
  EXPECT_FALSE(ReadExitStatus(link).ok());
  std::filesystem::remove_all(dir);
}

TEST(ProcessInfoTest, AStartTimeIsReadPastANameWithSpacesAndParentheses) {
  const auto own = ProcessStartTicks(::getpid());
  ASSERT_TRUE(own.has_value());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::prctl(PR_SET_NAME, "x) 1 2 (y", 0, 0, 0);
    (void)!::write(ready[1], "r", 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const auto ticks = ProcessStartTicks(child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_TRUE(ticks.has_value());
  EXPECT_GE(*ticks, *own) << "a child starts after its parent";
  EXPECT_EQ(ProcessStartTicks(child), std::nullopt) << "a reaped process has no start time";
}

TEST(ProcessInfoTest, OwnProcessAndCapacity) {
  auto ticks = ProcessStartTicks(::getpid());
  ASSERT_TRUE(ticks.has_value());
  EXPECT_TRUE(ProcessIsAlive(::getpid(), *ticks));
  EXPECT_FALSE(ProcessIsAlive(::getpid(), *ticks + 1));
  auto cap = ReadMachineCapacity();
  ASSERT_TRUE(cap.ok());
  EXPECT_GE(cap->cpus_milli, 1000);
  EXPECT_GT(cap->memory_bytes, 0);
}

}  // namespace
}  // namespace tau::exec
