// Retries and resume end to end: a real Python job that checkpoints every
// step, crashes, and is carried on from its newest complete checkpoint.

#include <gmock/gmock.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class ResumeTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    std::ifstream in(fs::path(TAU_SOURCE_DIR) / "examples" / "resume" / "counter.py");
    std::stringstream text;
    text << in.rdbuf();
    WriteFile("counter.py", text.str());
  }
  std::string Spec(const std::string& name, const std::string& extra) {
    return WriteSpec(name + ".yaml", "schema_version: 1\nname: " + name +
                                         "\nrun:\n  entrypoint: counter.py\ncompute:\n  cpus: 100m\n  memory: 128Mi\n" +
                                         extra);
  }
};

// 0² + 1² + … + 9²
constexpr char kUninterrupted[] = "total 285\n";

TEST_F(ResumeTest, ACrashedJobIsRetriedFromItsNewestCompleteCheckpointAndEndsLikeAnUninterruptedRun) {
  CommandResult plain = Tau({"run", "-f", Spec("plain", "")});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.out, HasSubstr(kUninterrupted));

  std::string spec = Spec("crash", "runtime:\n  env:\n    CRASH_AT_STEP: \"5\"\nretry:\n  max_restarts: 2\n  on: [\"exit:3\"]\n"
                                   "  backoff: 1s\n");
  CommandResult r = Tau({"run", "-f", spec});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // -f followed both attempts.
  EXPECT_THAT(r.out, HasSubstr("attempt 1 (first run) starts at step 0 from scratch\n"));
  EXPECT_THAT(r.out, HasSubstr("attempt 2 (exit:3) starts at step 5 from step-0005.json\n"));
  // A separator line says where attempt 2's output starts, and why it ran.
  EXPECT_THAT(r.out, HasSubstr("--- attempt 2 (exit:3, resumed from step-0005.json) ---\n"
                               "attempt 2 (exit:3) starts at step 5"));
  EXPECT_THAT(r.out, Not(HasSubstr("--- attempt 1")));
  EXPECT_THAT(r.out, HasSubstr(kUninterrupted));
  nlohmann::json job = Job("crash");
  EXPECT_EQ(job["state"], "Succeeded");
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(job["attempts"][0]["reason"], "ExitCode");
  EXPECT_EQ(job["attempts"][1]["retry_reason"], "exit:3");
  EXPECT_THAT(job["attempts"][1]["resumed_from"].get<std::string>(), HasSubstr("/checkpoints/step-0005.json"));
  EXPECT_EQ(job["retries"]["restarts"], 1);

  // The index holds complete checkpoints only, pruned to checkpoint.keep.
  CommandResult listed = Tau({"checkpoints", "crash", "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  nlohmann::json index = nlohmann::json::parse(listed.out);
  ASSERT_EQ(index["checkpoints"].size(), 3u);
  EXPECT_EQ(index["checkpoints"][0]["name"], "step-0010.json");
  EXPECT_THAT(index["checkpoints"][0]["digest"].get<std::string>(), HasSubstr("sha256:"));
  EXPECT_THAT(listed.out, Not(HasSubstr(".tmp")));
  EXPECT_THAT(Tau({"checkpoints", "crash"}).out, HasSubstr("step-0010.json"));
}

TEST_F(ResumeTest, AnExhaustedBudgetEndsFailedWithTheReason) {
  std::string spec = WriteSpec("always.yaml",
                               "schema_version: 1\nname: always\nrun:\n  entrypoint: 'echo try $TAU_ATTEMPT; exit 3'\n"
                               "compute:\n  cpus: 100m\nretry:\n  max_restarts: 1\n  on: [\"exit:3\"]\n  backoff: 1s\n");
  CommandResult r = Tau({"run", "-f", spec});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.out, HasSubstr("try 1\n"));
  EXPECT_THAT(r.out, HasSubstr("try 2\n"));
  EXPECT_THAT(r.err, HasSubstr("ended Failed after 2 attempts: exit code 3; not retried: the retry budget is spent "
                               "(1 of retry.max_restarts 1 used)"));
  nlohmann::json job = Job("always");
  EXPECT_EQ(job["state"], "Failed");
  EXPECT_EQ(job["reason"], "ExitCode");
}

TEST_F(ResumeTest, TauResumeCarriesAFailedJobOnFromItsCheckpoint) {
  // No retry policy: the crash ends the job, and the user resumes it.
  std::string spec = Spec("manual", "runtime:\n  env:\n    CRASH_AT_STEP: \"7\"\n");
  CommandResult r = Tau({"run", "-f", spec});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  CommandResult bad = Tau({"resume", "manual", "--from", "step-0099.json"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("has no complete checkpoint named \"step-0099.json\"; complete ones, newest first: "
                                 "step-0007.json, step-0006.json, step-0005.json"));
  CommandResult resumed = Tau({"resume", "manual", "-f"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("resumed from its newest checkpoint, step-0007.json"));
  EXPECT_THAT(resumed.out, HasSubstr("attempt 2 (resume) starts at step 7 from step-0007.json\n"));
  EXPECT_THAT(resumed.out, HasSubstr(kUninterrupted));
  EXPECT_EQ(Job("manual")["state"], "Succeeded");
}

TEST_F(ResumeTest, ADaemonRestartDuringTheBackoffKeepsBudgetAndBackoff) {
  std::string spec = Spec("restart", "runtime:\n  env:\n    CRASH_AT_STEP: \"2\"\nretry:\n  max_restarts: 1\n"
                                     "  on: [\"exit:3\"]\n  backoff: 3s\n");
  std::string id = Submit(spec);
  ASSERT_TRUE(WaitForState(id, "Retrying"));
  std::string retry_at = Job(id)["retries"]["retry_at"];
  ASSERT_EQ(::kill(static_cast<pid_t>(DaemonPid()), SIGTERM), 0);
  ASSERT_TRUE(WaitForDaemonGone());
  // The next command starts a new daemon, which still knows the backoff.
  nlohmann::json job = Job(id);
  if (job["state"] == "Retrying") {
    EXPECT_EQ(job["retries"]["retry_at"], retry_at);
  }
  EXPECT_EQ(job["retries"]["restarts"], 1);
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  job = Job(id);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(job["retries"]["restarts"], 1);
  EXPECT_THAT(job["attempts"][1]["resumed_from"].get<std::string>(), HasSubstr("step-0002.json"));
}

}  // namespace
}  // namespace tau::testing
