// What a killed tau-shim leaves behind, and how it is found and killed.
// Real processes.

#include "exec/leftovers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "exec/exit_status.h"
#include "exec/shim_test_support.h"

namespace tau::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The job id carries this test process's pid: ctest runs tests as parallel
// processes, and the sweep matches an attempt's processes by these
// variables, so a shared id would let one test's sweep kill another's job.
const std::string kJobIdEnv = "TAU_JOB_ID=j_leftover" + std::to_string(::getpid());
const std::vector<std::string> kAttemptEnv = {kJobIdEnv, "TAU_ATTEMPT=1", "TAU_WORKER_INDEX=0"};

class LeftoversTest : public ShimFolderTest {
 protected:
  void TearDown() override {
    // Whatever a failed test left of the attempt (a fork storm included).
    AttemptProcesses attempt{record_, kAttemptEnv, ""};
    for (int i = 0; i < 20 && CountLeftovers(attempt) > 0; ++i) (void)KillLeftovers(attempt);
    ShimFolderTest::TearDown();
  }
  // Starts `script` under a shim, waits until it wrote `ready` in its
  // folder, then kills the shim with SIGKILL and waits until it is gone.
  ShimRecord RunAndKillShim(const std::string& script, const std::string& ready) {
    ShimLaunch l = Launch({"/bin/sh", "-c", script}, kAttemptEnv);
    ShimExit exit;
    ShimProcess shim = Start(l, &exit);
    for (int i = 0; i < 3000 && !fs::exists(dir_ / ready); ++i) ::usleep(10000);  // a hang guard
    EXPECT_TRUE(fs::exists(dir_ / ready)) << Log();
    record_ = ReadShimRecord(l.lock_path);
    EXPECT_TRUE(record_.has_value());
    EXPECT_EQ(::kill(static_cast<pid_t>(shim.pid), SIGKILL), 0);
    EXPECT_TRUE(exit.Wait());
    return record_.value_or(ShimRecord{});
  }
  std::optional<ShimRecord> record_;
};

TEST_F(LeftoversTest, AKilledShimsJobIsFoundAndKilledEvenOutsideItsSession) {
  // Another attempt of the same job (as a retry would be): never touched.
  std::vector<std::string> other_env = {kJobIdEnv, "TAU_ATTEMPT=2", "TAU_WORKER_INDEX=0",
                                        "PATH=/usr/bin:/bin"};
  std::vector<char*> envp, argv;
  for (auto& e : other_env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sleep_path = "/bin/sleep", seconds = "1000";
  argv = {sleep_path.data(), seconds.data(), nullptr};
  pid_t other = 0;
  ASSERT_EQ(::posix_spawn(&other, "/bin/sleep", nullptr, nullptr, argv.data(), envp.data()), 0);
  started_.push_back(other);

  // The job, and a process of it that left the shim's session.
  ShimLaunch l = Launch({"/bin/sh", "-c", "setsid sleep 1000 & echo $! > escaped; echo $$ > main; exec sleep 1000"},
                        kAttemptEnv);
  ShimExit exit;
  ShimProcess shim = Start(l, &exit);
  const int64_t main = ReadPid("main");
  const int64_t escaped = ReadPid("escaped");
  auto record = ReadShimRecord(l.lock_path);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->pid, shim.pid);
  EXPECT_EQ(record->start_ticks, shim.start_ticks);
  EXPECT_EQ(record->boot_id, CurrentBootId());
  EXPECT_FALSE(record->boot_id.empty());
  EXPECT_TRUE(record->job_started);

  ASSERT_EQ(::kill(static_cast<pid_t>(shim.pid), SIGKILL), 0);
  ASSERT_TRUE(exit.Wait());
  EXPECT_FALSE(Gone(main)) << "without cgroups the job outlives a killed shim";
  EXPECT_FALSE(ReadExitStatus(l.status_path).ok());
  EXPECT_TRUE(StatusReserved(l.status_path)) << "the shim had started the job";

  AttemptProcesses attempt{record, kAttemptEnv, ""};
  auto left = KillLeftovers(attempt);
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_FALSE(left->rebooted);
  EXPECT_GE(left->killed, 2);
  EXPECT_FALSE(left->contained) << "no cgroup held it";
  EXPECT_TRUE(Gone(main)) << "gone when KillLeftovers returns";
  EXPECT_TRUE(Gone(escaped));
  EXPECT_FALSE(Gone(other)) << "another attempt's process was killed";
}

TEST_F(LeftoversTest, AShimOfAnEarlierBootLeftNothing) {
  AttemptProcesses attempt{ShimRecord{::getpid(), 1, "another-boot", true}, kAttemptEnv, ""};
  auto left = KillLeftovers(attempt);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->rebooted);
  EXPECT_EQ(left->killed, 0);
}

TEST_F(LeftoversTest, AForkStormIsGoneWhenKillLeftoversReturns) {
  // Every process double-forks more while it is being killed; bounded
  // (four levels of four: 341 processes at most) so that a failure cannot
  // exhaust the machine.
  const std::string storm =
      "storm() { [ $1 -gt 0 ] || exec sleep 1000; i=0; "
      "while [ $i -lt 4 ]; do ( storm $(($1 - 1)) & ); i=$((i + 1)); done; exec sleep 1000; }; "
      "( storm 4 & ); echo > forking; exec sleep 1000";
  ShimRecord record = RunAndKillShim(storm, "forking");
  AttemptProcesses attempt{record, kAttemptEnv, ""};
  ASSERT_GT(CountLeftovers(attempt), 0) << "the storm runs on without its shim";
  auto left = KillLeftovers(attempt, {std::chrono::seconds(30), nullptr});  // a hang guard, not a timing
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_GT(left->killed, 1);
  EXPECT_EQ(CountLeftovers(attempt), 0) << "a process forked during the sweep survived it";
}

TEST_F(LeftoversTest, ProcessesThatOutliveSigkillAreAnErrorThatNamesThem) {
  ShimRecord record = RunAndKillShim("echo $$ > main; exec sleep 1000", "main");
  const int64_t main = ReadPid("main");
  AttemptProcesses attempt{record, kAttemptEnv, ""};
  // A process the signal does not end (stuck in the kernel): here, one the
  // signal never reaches.
  KillLimits limits{std::chrono::milliseconds(50), [](int64_t, int) { return 0; }};
  auto left = KillLeftovers(attempt, limits);
  ASSERT_FALSE(left.ok());
  EXPECT_EQ(left.error().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(left.error().message(), HasSubstr("1 process of the attempt is still alive 50 ms after SIGKILL (pid " +
                                                std::to_string(main) + ")"));
  EXPECT_FALSE(Gone(main));
  auto again = KillLeftovers(attempt);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(Gone(main));
}

TEST_F(LeftoversTest, AJobThatRemovesItsReservationStillLeavesTheRecordOfItsStart) {
  ShimRecord record = RunAndKillShim("rm -f status.json.tmp; echo > removed; exec sleep 1000", "removed");
  EXPECT_FALSE(StatusReserved((dir_ / "status.json").string())) << "the job removed it";
  EXPECT_TRUE(record.job_started) << "the lock file still says the shim started the job";
}

TEST_F(LeftoversTest, AShimThatDidNotStartTheJobRecordsNoStart) {
  ShimLaunch l = Launch({"/bin/sh", "-c", "echo > ran"}, kAttemptEnv);
  l.cgroup_dir = (dir_ / "no-such-cgroup").string();  // the shim cannot join it: no job
  ASSERT_TRUE(RunToEnd(l));
  auto record = ReadShimRecord(l.lock_path);
  ASSERT_TRUE(record.has_value());
  EXPECT_FALSE(record->job_started);
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
  auto status = ReadExitStatus(l.status_path);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_THAT(status->error, HasSubstr("cannot join cgroup"));
}

TEST_F(LeftoversTest, OnlyAShimThatWroteTheStatusRecordsThatItDid) {
  ShimLaunch l = Launch({"/bin/sh", "-c", "exit 3"}, kAttemptEnv);
  ASSERT_TRUE(RunToEnd(l));
  auto record = ReadShimRecord(l.lock_path);
  ASSERT_TRUE(record.has_value());
  EXPECT_TRUE(record->job_started);
  EXPECT_TRUE(record->status_written);
  ASSERT_EQ(ReadExitStatus(l.status_path)->exit_code, 3);

  // A job that writes a status of its own in its folder and kills its
  // shim: the status is there, the shim's word for it is not.
  ShimRecord killed = RunAndKillShim(
      "printf '{\"version\":1,\"exit_code\":0,\"signal\":null}' > forged; mv forged status.json; "
      "echo > ready; exec sleep 1000",
      "ready");
  EXPECT_EQ(ReadExitStatus(l.status_path)->exit_code, 0) << "the job's own status is in place";
  EXPECT_TRUE(killed.job_started);
  EXPECT_FALSE(killed.status_written);
  EXPECT_FALSE(ReadShimRecord(l.lock_path)->status_written);
}

TEST_F(LeftoversTest, OnlyACgroupFindsAProcessThatLeftTheSessionAndClearedItsEnvironment) {
  // A double fork into a session of its own, with an empty environment.
  ShimRecord record = RunAndKillShim(
      "( env -i setsid sh -c 'echo $$ > escaped.tmp; mv escaped.tmp escaped; exec sleep 1000' & ); "
      "while [ ! -s escaped ]; do sleep 0.01; done; echo > ready; exec sleep 1000",
      "ready");
  const int64_t escaped = ReadPid("escaped");
  auto left = KillLeftovers(AttemptProcesses{record, kAttemptEnv, ""});
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_GE(left->killed, 1);
  EXPECT_FALSE(left->contained) << "nothing proves the attempt gone";
  EXPECT_FALSE(Gone(escaped)) << "the session and the environment do not find it";

  // A cgroup does (a fake cgroupfs: a folder whose cgroup.procs lists it).
  const fs::path cgroup = dir_ / "cgroup";
  fs::create_directories(cgroup);
  std::ofstream(cgroup / "cgroup.procs") << escaped << "\n";
  left = KillLeftovers(AttemptProcesses{record, kAttemptEnv, cgroup.string()});
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(left->killed, 1);
  EXPECT_TRUE(left->contained);
  EXPECT_TRUE(Gone(escaped));
}

}  // namespace
}  // namespace tau::exec
