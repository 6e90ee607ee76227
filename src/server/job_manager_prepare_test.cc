// The job code against the execution seam's Prepare and Discard: an
// attempt is prepared when its job enters the queue for it, before
// admission, and what was prepared is let go of when the attempt ends or
// the job is cancelled or removed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/admission/fake_admission.h"
#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::ElementsAre;
using ::testing::Contains;

constexpr char kRetryJob[] =
    "name: r\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n"
    "retry:\n  max_restarts: 1\n  on: [\"exit:3\"]\n  backoff: 10s\n";

class PrepareSeamTest : public JobManagerTest {
 protected:
  void End(JobManager& jobs, FakeExecutor& runner, const std::string& id, int attempt, int exit_code) {
    exec::ExitStatus s;
    s.exit_code = exit_code;
    runner.statuses[StatusPath(id, attempt)] = s;
    jobs.OnShimExit(runner.TokenOf(runner.next_pid - 1));
  }
};

TEST_F(PrepareSeamTest, AnAttemptIsPreparedBeforeItStartsAndDiscardedWhenItEnds) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  ASSERT_EQ(runner.prepared.size(), 1u);
  const AttemptPlan& plan = runner.prepared[0];
  EXPECT_EQ(plan.job_id, id);
  EXPECT_EQ(plan.attempt, 1);
  EXPECT_EQ(plan.spec.name, "a");
  EXPECT_EQ(plan.snapshot_path, home().blob(digest_).string());
  EXPECT_THAT(plan.env, Contains("TAU_JOB_ID=" + id));
  EXPECT_THAT(plan.env, Contains("TAU_ATTEMPT=1"));
  EXPECT_THAT(plan.env, Contains("TAU_WORKSPACE=default"));
  EXPECT_EQ(plan.resume_from, "");

  End(*jobs, runner, id, 1, 0);
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
  EXPECT_THAT(runner.calls, ElementsAre("prepare " + id + " 1", "start " + id + " 1 0", "discard " + id));
}

TEST_F(PrepareSeamTest, ARetryIsPreparedAsTheNextAttemptWithItsReasonAfterTheFailedOneIsDiscarded) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  End(*jobs, runner, id, 1, 3);
  ASSERT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(runner.prepared.size(), 1u) << "a job waiting out its backoff is not in a queue yet";
  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(runner.prepared.size(), 2u);
  EXPECT_EQ(runner.prepared[1].attempt, 2);
  EXPECT_THAT(runner.prepared[1].env, Contains("TAU_ATTEMPT=2"));
  EXPECT_THAT(runner.prepared[1].env, Contains("TAU_RETRY_REASON=exit:3"));
  EXPECT_THAT(runner.calls, ElementsAre("prepare " + id + " 1", "start " + id + " 1 0", "discard " + id,
                                        "prepare " + id + " 2", "start " + id + " 2 0"));
}

TEST_F(PrepareSeamTest, AnAttemptResumingFromACheckpointIsPreparedWithIt) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  fs::create_directories(home().checkpoint_dir(id));
  std::ofstream(home().checkpoint_dir(id) / "step-10") << "state";
  End(*jobs, runner, id, 1, 3);
  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(runner.prepared.size(), 2u);
  const std::string checkpoint = (home().checkpoint_dir(id) / "step-10").string();
  EXPECT_EQ(runner.prepared[1].resume_from, checkpoint);
  EXPECT_THAT(runner.prepared[1].env, Contains("TAU_RESUME_FROM=" + checkpoint));
}

TEST_F(PrepareSeamTest, AJobWhoseAttemptCannotBePreparedWaitsWithWhyAndIsPreparedAgainByTheNextPass) {
  FakeExecutor runner;
  runner.fail_prepare = UnavailableError("the API server does not answer");
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  EXPECT_EQ(View(id)->job.state, JobState::kQueued);
  EXPECT_EQ(View(id)->job.reason, "PrepareFailed");
  EXPECT_EQ(View(id)->job.message, "the API server does not answer");
  EXPECT_TRUE(runner.starts.empty()) << "an attempt that was not prepared does not start";

  runner.fail_prepare = Status::Ok();
  (*jobs->Submit(Request(kJob)));  // the next pass
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_THAT(runner.calls, Contains("prepare " + id + " 1"));
}

TEST_F(PrepareSeamTest, AQueuedJobThatIsCancelledIsDiscarded) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  // Holds the machine's 2 CPUs, so the next one waits.
  (*jobs->Submit(Request("name: big\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")));
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  ASSERT_EQ(View(id)->job.state, JobState::kQueued);
  EXPECT_THAT(runner.calls, Contains("prepare " + id + " 1"));
  ASSERT_TRUE(jobs->Cancel(id).ok());
  EXPECT_THAT(runner.discarded, ElementsAre(id));
}

TEST_F(PrepareSeamTest, ARemovedJobIsDiscarded) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  End(*jobs, runner, id, 1, 0);
  runner.discarded.clear();
  ASSERT_TRUE(jobs->Remove(id).ok());
  EXPECT_THAT(runner.discarded, ElementsAre(id));
}

TEST_F(PrepareSeamTest, ASnapshotOverTheLimitIsRefusedAtSubmitNamingItsSizeAndTheLimit) {
  tweak_ = [](JobManagerOptions& o) {
    o.max_snapshot_bytes = 50;
    o.max_snapshot_why = " (a ConfigMap's)";
  };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  const auto size = fs::file_size(home().blob(digest_));
  ASSERT_GT(size, 50u);
  auto submitted = jobs->Submit(Request(kJob));
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(submitted.status().message(),
            "the code snapshot is " + std::to_string(size) + " bytes, over the limit of 50 bytes (a ConfigMap's)");
  EXPECT_TRUE(runner.prepared.empty());
}

TEST_F(PrepareSeamTest, OnAClusterAJobIsNotBoundByTheMachinesCapacityOrGpus) {
  FakeAdmission admission;
  tweak_ = [&admission](JobManagerOptions& o) {
    o.runs_locally = false;
    o.admission = &admission;
  };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  // 8 GPUs and 64 CPUs on a machine of 2 CPUs and no GPU.
  auto submitted = jobs->Submit(Request("name: big\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 64, gpus: 8}\n"));
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const std::string id = (*submitted)->job.id;
  admission.to_admit = {id};
  (*jobs->Submit(Request(kJob)));  // the next pass
  EXPECT_EQ(View(id)->job.state, JobState::kRunning) << "the cluster, not the machine, places it";
}

}  // namespace
}  // namespace tau::server
