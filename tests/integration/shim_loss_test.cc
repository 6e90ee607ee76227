// kill -9 of an attempt's tau-shim, end to end (without cgroups on hosts
// that do not delegate them): the job it ran is killed before the attempt
// ends, so its retry never runs beside it, and an attempt that may still
// have a process nobody can find, or whose start the job hid, is not
// retried at all.

#include <gmock/gmock.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Whether `pid` runs (a zombie has ended).
bool Running(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

class ShimLossTest : public DaemonTest {
 protected:
  void TearDown() override {
    if (escaped_ > 0) ::kill(static_cast<pid_t>(escaped_), SIGKILL);
    DaemonTest::TearDown();
  }
  // Whether the daemon runs jobs in cgroup v2 leaves (its log says so).
  bool CgroupsDelegated() {
    return ReadFile(home_ / "server.log").find("jobs run in cgroup v2 leaves") != std::string::npos;
  }
  // How attempt 1 ends once its shim was killed while its job ran: killed
  // and proven gone by a cgroup (Lost), or killed as far as anyone can see
  // (Unknown: without a cgroup a process that left may be missed).
  std::string KilledAttemptReason() { return CgroupsDelegated() ? "Lost" : "Unknown"; }
  fs::path ShimLock(const std::string& id) { return home_ / "shims" / id / "1" / "rank-0.lock"; }
  int64_t escaped_ = 0;

  std::string VictimSpec() {
    // Each attempt records its start, and whether the previous attempt's
    // process still ran when it started; attempt 1 runs until killed.
    WriteFile("attempt.sh",
              "runs=\"$TAU_OUTPUT_DIR/runs\"\n"
              "if [ -f \"$TAU_OUTPUT_DIR/running\" ]; then\n"
              "  other=$(cat \"$TAU_OUTPUT_DIR/running\")\n"
              "  state=$(cut -d' ' -f3 /proc/$other/stat 2>/dev/null)\n"
              "  if [ -n \"$state\" ] && [ \"$state\" != Z ]; then echo \"OVERLAP with $other\" >> \"$runs\"; fi\n"
              "fi\n"
              "echo $$ > \"$TAU_OUTPUT_DIR/running\"\n"
              "echo \"start $TAU_ATTEMPT $$\" >> \"$runs\"\n"
              "if [ \"$TAU_ATTEMPT\" = 1 ]; then sleep 1000; fi\n"
              "echo \"end $TAU_ATTEMPT\" >> \"$runs\"\n");
    // Without a cgroup the killed attempt ends Unknown: retried because
    // retry.on says so.
    return WriteSpec("victim.yaml",
                     "schema_version: 1\nname: victim\nrun:\n  entrypoint: 'sh attempt.sh'\n"
                     "  launcher: command\ncompute:\n  cpus: 100m\nretry:\n  backoff: 1s\n  max_restarts: 1\n"
                     "  on: [unknown]\n");
  }
};

TEST_F(ShimLossTest, AKilledShimsJobIsGoneBeforeItsRetryStarts) {
  std::string id = Submit(VictimSpec());
  ASSERT_FALSE(id.empty());
  const fs::path job_dir = home_ / "jobs" / id;
  const fs::path runs = job_dir / "outputs" / "runs";
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(runs).find("start 1 ") != std::string::npos; })) << ReadFile(runs);
  const int64_t first = std::atoll(ReadFile(job_dir / "outputs" / "running").c_str());
  ASSERT_GT(first, 0);
  const int64_t shim = std::atoll(ReadFile(ShimLock(id)).c_str());
  ASSERT_GT(shim, 0);

  ASSERT_EQ(::kill(static_cast<pid_t>(shim), SIGKILL), 0);

  ASSERT_TRUE(WaitForState(id, "Succeeded")) << Job(id).dump(2) << ReadFile(runs);
  std::string log = ReadFile(runs);
  EXPECT_THAT(log, HasSubstr("start 2 "));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("OVERLAP"))) << log;
  EXPECT_FALSE(Running(first)) << "attempt 1's process outlived its shim";
  nlohmann::json job = Job(id);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(job["attempts"][0]["reason"], KilledAttemptReason());
  CommandResult events = Tau({"events", id});
  EXPECT_THAT(events.out, HasSubstr("ShimLost"));
}

TEST_F(ShimLossTest, ARestartedDaemonKillsWhatADeadShimLeftBeforeRetrying) {
  std::string id = Submit(VictimSpec());
  ASSERT_FALSE(id.empty());
  const fs::path job_dir = home_ / "jobs" / id;
  const fs::path runs = job_dir / "outputs" / "runs";
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(runs).find("start 1 ") != std::string::npos; })) << ReadFile(runs);
  const int64_t first = std::atoll(ReadFile(job_dir / "outputs" / "running").c_str());
  const int64_t shim = std::atoll(ReadFile(ShimLock(id)).c_str());
  ASSERT_GT(first, 0);
  ASSERT_GT(shim, 0);
  // The daemon and the shim die; the job runs on with nobody watching.
  ASSERT_EQ(::kill(static_cast<pid_t>(DaemonPid()), SIGKILL), 0);
  ASSERT_TRUE(WaitForDaemonGone());
  ASSERT_EQ(::kill(static_cast<pid_t>(shim), SIGKILL), 0);
  ASSERT_TRUE(Running(first));

  // The next tau starts a daemon, which finds the attempt without a shim.
  ASSERT_TRUE(WaitForState(id, "Succeeded")) << Job(id).dump(2) << ReadFile(runs);
  std::string log = ReadFile(runs);
  EXPECT_THAT(log, HasSubstr("start 2 "));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("OVERLAP"))) << log;
  EXPECT_FALSE(Running(first)) << "attempt 1's process outlived its shim and the daemon";
  EXPECT_EQ(Job(id)["attempts"][0]["reason"], KilledAttemptReason());
}

TEST_F(ShimLossTest, AJobThatEscapesTheSweepIsNotRetriedBesideItself) {
  // Attempt 1 double-forks a process with an empty environment into a
  // session of its own: neither the shim's session nor TAU_* finds it.
  WriteFile("escape.sh",
            "echo \"start $TAU_ATTEMPT\" >> \"$TAU_OUTPUT_DIR/runs\"\n"
            "if [ \"$TAU_ATTEMPT\" = 1 ]; then\n"
            "  ( env -i setsid sh -c 'echo $$ > \"$0/escaped.tmp\"; mv \"$0/escaped.tmp\" \"$0/escaped\"; "
            "exec sleep 1000' \"$TAU_OUTPUT_DIR\" & )\n"
            "  while [ ! -s \"$TAU_OUTPUT_DIR/escaped\" ]; do sleep 0.05; done\n"
            "  sleep 1000\n"
            "fi\n");
  std::string id = Submit(WriteSpec("escape.yaml",
                                    "schema_version: 1\nname: escape\nrun:\n  entrypoint: 'sh escape.sh'\n"
                                    "  launcher: command\ncompute:\n  cpus: 100m\nretry:\n  backoff: 1s\n"));
  ASSERT_FALSE(id.empty());
  const fs::path outputs = home_ / "jobs" / id / "outputs";
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(outputs / "escaped").empty(); })) << ReadFile(outputs / "runs");
  escaped_ = std::atoll(ReadFile(outputs / "escaped").c_str());
  ASSERT_GT(escaped_, 0);
  const int64_t shim = std::atoll(ReadFile(ShimLock(id)).c_str());
  ASSERT_GT(shim, 0);

  ASSERT_EQ(::kill(static_cast<pid_t>(shim), SIGKILL), 0);

  if (CgroupsDelegated()) {
    // The cgroup finds it: killed, proven gone, retried.
    ASSERT_TRUE(WaitForState(id, "Succeeded")) << Job(id).dump(2);
    EXPECT_FALSE(Running(escaped_));
    EXPECT_EQ(Job(id)["attempts"][0]["reason"], "Lost");
    return;
  }
  ASSERT_TRUE(WaitForState(id, "Failed")) << Job(id).dump(2);
  nlohmann::json job = Job(id);
  EXPECT_EQ(job["reason"], "Unknown");
  EXPECT_THAT(job["message"].get<std::string>(), HasSubstr("no cgroup held the attempt"));
  EXPECT_THAT(job["message"].get<std::string>(), HasSubstr("not retried"));
  ASSERT_EQ(job["attempts"].size(), 1u);
  EXPECT_THAT(Tau({"why", id}).out, HasSubstr("Unknown: " + job["message"].get<std::string>()));
  EXPECT_THAT(Tau({"events", id}).out, HasSubstr("ShimLost"));
  // Failed is final: no second attempt comes.
  EXPECT_EQ(ReadFile(outputs / "runs"), "start 1\n");
  EXPECT_TRUE(Running(escaped_)) << "this is what it was not retried beside";
}

TEST_F(ShimLossTest, AJobThatRemovesItsStatusReservationIsNotTakenForOneThatNeverStarted) {
  // The job removes the reservation that says it started, kills its shim
  // (the nearest tau-shim above it) and ends.
  WriteFile("hide.sh",
            "echo \"start $TAU_ATTEMPT\" >> \"$TAU_OUTPUT_DIR/runs\"\n"
            "rm -f \"../attempts/$TAU_ATTEMPT/rank-$TAU_WORKER_INDEX.status.json.tmp\"\n"
            "p=$$\n"
            "while [ \"$(cat /proc/$p/comm)\" != tau-shim ]; do p=$(cut -d' ' -f4 /proc/$p/stat); done\n"
            "kill -9 $p\n");
  std::string id = Submit(WriteSpec("hide.yaml",
                                    "schema_version: 1\nname: hide\nrun:\n  entrypoint: 'sh hide.sh'\n"
                                    "  launcher: command\ncompute:\n  cpus: 100m\nretry:\n  backoff: 1s\n"));
  ASSERT_FALSE(id.empty());
  const fs::path runs = home_ / "jobs" / id / "outputs" / "runs";
  ASSERT_TRUE(WaitForState(id, "Failed")) << Job(id).dump(2) << ReadFile(runs);
  nlohmann::json job = Job(id);
  EXPECT_EQ(job["reason"], "Unknown") << job.dump(2);
  EXPECT_THAT(job["message"].get<std::string>(), ::testing::Not(HasSubstr("before it started the job")));
  EXPECT_EQ(ReadFile(runs), "start 1\n") << "the job ran twice";  // and Failed is final
  EXPECT_EQ(Job(id)["attempts"].size(), 1u);
}

}  // namespace
}  // namespace tau::testing

