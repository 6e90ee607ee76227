// kill -9 of an attempt's tau-shim, end to end without cgroups: the job it
// ran is killed before the attempt ends, so its retry never runs beside it.

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
    return WriteSpec("victim.yaml",
                     "schema_version: 1\nname: victim\nrun:\n  entrypoint: 'sh attempt.sh'\n"
                     "  launcher: command\ncompute:\n  cpus: 100m\nretry:\n  backoff: 1s\n");
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
  const int64_t shim = std::atoll(ReadFile(job_dir / "attempts" / "1" / "rank-0.lock").c_str());
  ASSERT_GT(shim, 0);

  ASSERT_EQ(::kill(static_cast<pid_t>(shim), SIGKILL), 0);

  ASSERT_TRUE(WaitForState(id, "Succeeded")) << Job(id).dump(2) << ReadFile(runs);
  std::string log = ReadFile(runs);
  EXPECT_THAT(log, HasSubstr("start 2 "));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("OVERLAP"))) << log;
  EXPECT_FALSE(Running(first)) << "attempt 1's process outlived its shim";
  nlohmann::json job = Job(id);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(job["attempts"][0]["reason"], "Lost");
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
  const int64_t shim = std::atoll(ReadFile(job_dir / "attempts" / "1" / "rank-0.lock").c_str());
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
  EXPECT_EQ(Job(id)["attempts"][0]["reason"], "Lost");
}

}  // namespace
}  // namespace tau::testing

