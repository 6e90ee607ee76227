// kill -9 of taugridd at any moment loses nothing: a batch of jobs runs
// while the daemon is killed and restarted again and again; every
// acknowledged job must end Succeeded, and each must have run exactly once.

#include <gmock/gmock.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

class CrashSafetyTest : public DaemonTest {};

TEST_F(CrashSafetyTest, KillingTheDaemonRepeatedlyLosesNoJobAndRunsNoneTwice) {
  const std::string runs = (work_ / "runs.log").string();
  // Each run appends "<job id> <attempt>" to a shared file (O_APPEND).
  std::string spec = WriteSpec(
      "batch.yaml",
      "schema_version: 1\nname: batch\nrun:\n  entrypoint: 'echo \"$TAU_JOB_ID $TAU_ATTEMPT\" >> \"$RUNS_FILE\"; "
      "sleep 0.$(( $$ % 4 ))'\ncompute:\n  cpus: 100m\n  memory: 64Mi\nruntime:\n  env:\n    RUNS_FILE: " + runs + "\n");

  std::set<std::string> acknowledged;
  for (int i = 0; i < 24; ++i) acknowledged.insert(Submit(spec));

  std::mt19937 rng(42);
  for (int round = 0; round < 8; ++round) {
    int64_t pid = DaemonPid();
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 250)(rng)));
    ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
    ASSERT_TRUE(WaitForDaemonGone());
    // Submissions while no daemon runs start a new one on demand.
    CommandResult r = Tau({"run", spec});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    acknowledged.insert(r.out.substr(0, r.out.find('\n')));
  }

  for (const std::string& id : acknowledged) {
    ASSERT_TRUE(WaitUntil([&] {
      std::string state = Job(id).value("state", "");
      return state == "Succeeded" || state == "Failed" || state == "Cancelled";
    })) << id;
    nlohmann::json job = Job(id);
    EXPECT_EQ(job["state"], "Succeeded") << id << " ended " << job.dump();
  }

  std::map<std::string, int> times_run;
  std::ifstream in(runs);
  std::string id;
  int attempt;
  while (in >> id >> attempt) ++times_run[id];
  for (const std::string& ack : acknowledged) {
    EXPECT_EQ(times_run[ack], 1) << ack << " ran " << times_run[ack] << " times";
  }
  EXPECT_EQ(times_run.size(), acknowledged.size());
}

}  // namespace
}  // namespace tau::testing
