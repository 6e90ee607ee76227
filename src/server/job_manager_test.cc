// The job state machine against a fake runner: every branch of recovery
// after a daemon restart, deterministically.

#include "server/job_manager.h"
#include "server/control_loop.h"
#include "server/job_manager_test_fixture.h"
#include "server/evidence_off_loop.h"
#include "server/submit_off_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>

#include "evidence/snapshot.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::server {
namespace {

namespace fs = std::filesystem;
using store::JobState;
using ::testing::HasSubstr;


TEST_F(JobManagerTest, SubmitStartsAndAnExitEndsTheJob) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto job = jobs->Submit(Request(kJob));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::string id = (*job)->job.id;
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_THAT(runner.starts[0].env, ::testing::Contains("TAU_JOB_ID=" + id));
  EXPECT_THAT(runner.starts[0].env, ::testing::Contains("TAU_ATTEMPT=1"));
  EXPECT_EQ(runner.starts[0].cwd, home().code_dir(id).string());
  EXPECT_TRUE(fs::exists(home().code_dir(id) / "run.sh"));
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);

  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = ok;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
  EXPECT_EQ(View(id)->job.reason, "Completed");
}

TEST_F(JobManagerTest, AnAttemptRecordsTheClusterQueueAndFlavorsThatAdmittedIt) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto job = jobs->Submit(Request(kJob));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const std::string id = (*job)->job.id;
  auto view = View(id);
  ASSERT_EQ(view->attempts.size(), 1u);
  const store::AttemptRecord& a = view->attempts[0];
  EXPECT_FALSE(a.cluster_queue.empty()) << "the embedded engine names its ClusterQueue";
  EXPECT_THAT(a.flavors, HasSubstr("cpu="));
  EXPECT_TRUE(HasEvent(id, "Admitted", "attempt 1; by ClusterQueue " + a.cluster_queue + " (cpu="));
  // Kept in the database: a restarted daemon reads the same.
  auto stored = store_->LoadAttemptsOf({id});
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].cluster_queue, a.cluster_queue);
  EXPECT_EQ((*stored)[0].flavors, a.flavors);
}

TEST_F(JobManagerTest, ASubmitSentAgainWithItsRequestIdCreatesNoSecondJob) {
  FakeExecutor runner;
  std::string id;
  {
    auto jobs = Manager(&runner);
    SubmitRequest req = Request(kJob);
    req.request_id = "r_once";
    id = (*jobs->Submit(req))->job.id;
    auto again = jobs->Submit(req);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ((*again)->job.id, id);
    EXPECT_EQ(publisher_.Current()->jobs.size(), 1u);
    EXPECT_EQ(runner.starts.size(), 1u);
    // Another spec under the same id is a client bug, not a repeat.
    SubmitRequest other = Request("name: b\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n");
    other.request_id = "r_once";
    auto refused = jobs->Submit(other);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.error().message(), HasSubstr(id));
    SubmitRequest bad = Request(kJob);
    bad.request_id = "has space";
    EXPECT_EQ(jobs->Submit(bad).status().code(), StatusCode::kInvalidArgument);
  }
  // After a restart the id is still known.
  FakeExecutor after;
  after.lock_holders[LockPath(id, 1)] = 4242;
  auto jobs = Manager(&after);
  ASSERT_TRUE(jobs->Recover().ok());
  SubmitRequest req = Request(kJob);
  req.request_id = "r_once";
  auto again = jobs->Submit(req);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->job.id, id);
  EXPECT_EQ(publisher_.Current()->jobs.size(), 1u);
  EXPECT_TRUE(after.starts.empty());
}

TEST_F(JobManagerTest, ARequestIdSentAgainWithOtherCodeIsRefused) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  SubmitRequest req = Request(kJob);
  req.request_id = "r_code";
  std::string id = (*jobs->Submit(req))->job.id;
  // The same spec with other code is another submission, not a repeat.
  fs::create_directories(root_ / "code2");
  std::ofstream(root_ / "code2" / "run.sh") << "echo other\n";
  auto snap = evidence::PackSnapshot(root_ / "code2", {});
  ASSERT_TRUE(snap.ok());
  ASSERT_NE(snap->digest, digest_);
  std::ofstream(home().blob(snap->digest), std::ios::binary) << snap->blob;
  SubmitRequest other = req;
  other.snapshot_digest = snap->digest;
  auto refused = jobs->Submit(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message(), HasSubstr("another code snapshot"));
  EXPECT_THAT(refused.error().message(), HasSubstr(id));
  EXPECT_EQ(publisher_.Current()->jobs.size(), 1u);
  EXPECT_EQ(runner.starts.size(), 1u);
}

TEST_F(JobManagerTest, CapacityQueuesAndReleases) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string a = (*jobs->Submit(Request(kJob)))->job.id;
  std::string b = (*jobs->Submit(Request(kJob)))->job.id;
  std::string c = (*jobs->Submit(Request(kJob)))->job.id;
  EXPECT_EQ(View(c)->job.state, JobState::kQueued);
  exec::ExitStatus failed;
  failed.exit_code = 3;
  runner.statuses[StatusPath(a, 1)] = failed;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(a)->job.state, JobState::kFailed);
  EXPECT_EQ(View(a)->job.reason, "ExitCode");
  EXPECT_EQ(View(a)->job.exit_code, 3);
  EXPECT_EQ(View(c)->job.state, JobState::kRunning);
  EXPECT_EQ(View(b)->job.state, JobState::kRunning);
}

TEST_F(JobManagerTest, AStartThatFailsEndsSetupFailed) {
  FakeExecutor runner;
  runner.fail_start = true;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "SetupFailed");
  EXPECT_THAT(View(id)->job.message, HasSubstr("cannot start tau-shim"));
}

TEST_F(JobManagerTest, CancelStopsTheShimAndTheExitEndsCancelled) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  ASSERT_TRUE(jobs->Cancel(id).ok());
  EXPECT_EQ(runner.stopped, std::vector<int64_t>{1000});
  EXPECT_TRUE(View(id)->job.cancel_requested);
  exec::ExitStatus term;
  term.signal = 15;
  term.terminated_by = "signal";
  runner.statuses[StatusPath(id, 1)] = term;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(id)->job.state, JobState::kCancelled);
}

TEST_F(JobManagerTest, NeverFittingJobsAreRefusedAndNothingIsStored) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto job = jobs->Submit(Request("name: big\nrun: {entrypoint: x}\ncompute: {cpus: 64}\n"));
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.error().message(), HasSubstr("64 CPU requested, the machine has 2"));
  EXPECT_TRUE(store_->LoadJobs()->empty());
}

TEST_F(JobManagerTest, DependentsWaitForSuccessAndFailWithTheirDependency) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string a = (*jobs->Submit(Request("name: prep\nrun: {entrypoint: x}\ncompute: {cpus: 100m}\n")))->job.id;
  std::string b = (*jobs->Submit(Request("name: train\nrun: {entrypoint: x}\ncompute: {cpus: 100m}\ndepends_on: [prep]\n")))->job.id;
  EXPECT_EQ(View(b)->job.state, JobState::kQueued);
  EXPECT_EQ(View(b)->job.reason, "WaitingForDependencies");
  EXPECT_THAT(View(b)->job.message, HasSubstr(a));
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(a, 1)] = ok;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(b)->job.state, JobState::kRunning);

  // A failed dependency fails its dependents, and theirs, in one pass.
  std::string c = (*jobs->Submit(Request("name: c\nrun: {entrypoint: x}\ncompute: {cpus: 100m}\n")))->job.id;
  std::string d = (*jobs->Submit(Request("name: d\nrun: {entrypoint: x}\ncompute: {cpus: 100m}\ndepends_on: [" + c + "]\n")))->job.id;
  std::string e = (*jobs->Submit(Request("name: e\nrun: {entrypoint: x}\ncompute: {cpus: 100m}\ndepends_on: [d, train]\n")))->job.id;
  exec::ExitStatus bad;
  bad.exit_code = 1;
  runner.statuses[StatusPath(c, 1)] = bad;
  jobs->OnShimExit(runner.TokenOf(1002));
  EXPECT_EQ(View(c)->job.state, JobState::kFailed);
  EXPECT_EQ(View(d)->job.state, JobState::kFailed);
  EXPECT_EQ(View(d)->job.reason, "DependencyFailed");
  EXPECT_EQ(View(e)->job.state, JobState::kFailed);
  EXPECT_THAT(View(e)->job.message, HasSubstr("(d) ended Failed"));
}

TEST_F(JobManagerTest, UnknownDependenciesAreRefusedAtSubmit) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto job = jobs->Submit(Request("name: x\nrun: {entrypoint: x}\ndepends_on: [nope]\n"));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(job.error().message(), HasSubstr("depends_on: no job with id or name \"nope\""));
}

TEST_F(JobManagerTest, AGangStartsEveryRankWithTheRendezvousContract) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request("name: gang\nrun: {entrypoint: ./w.sh}\ncompute: {workers: 3, cpus: 500m, memory: 256Mi}\n")))->job.id;
  ASSERT_EQ(runner.starts.size(), 3u);
  std::string port;
  for (int r = 0; r < 3; ++r) {
    const auto& env = runner.starts[static_cast<size_t>(r)].env;
    EXPECT_THAT(env, ::testing::Contains("RANK=" + std::to_string(r)));
    EXPECT_THAT(env, ::testing::Contains("NODE_RANK=" + std::to_string(r)));
    EXPECT_THAT(env, ::testing::Contains("TAU_WORKER_INDEX=" + std::to_string(r)));
    EXPECT_THAT(env, ::testing::Contains("WORLD_SIZE=3"));
    EXPECT_THAT(env, ::testing::Contains("LOCAL_RANK=0"));
    EXPECT_THAT(env, ::testing::Contains("LOCAL_WORLD_SIZE=1"));
    EXPECT_THAT(env, ::testing::Contains("MASTER_ADDR=127.0.0.1"));
    for (const auto& e : env) {
      if (e.starts_with("MASTER_PORT=")) {
        if (port.empty()) port = e;
        EXPECT_EQ(e, port) << "every rank meets at the same port";
      }
    }
    EXPECT_EQ(runner.starts[static_cast<size_t>(r)].log_path, home().log_file(id, 1, r).string());
  }
  EXPECT_FALSE(port.empty());
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
}

TEST_F(JobManagerTest, TheFirstFailingRankStopsTheOthersAndNamesTheOutcome) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request("name: gang\nrun: {entrypoint: ./w.sh}\ncompute: {workers: 3, cpus: 500m, memory: 256Mi}\n")))->job.id;
  exec::ExitStatus failed;
  failed.exit_code = 3;
  runner.statuses[home().status_file(id, 1, 1).string()] = failed;
  jobs->OnShimExit(runner.TokenOf(1001));  // rank 1 fails first
  EXPECT_EQ(runner.stopped, (std::vector<int64_t>{1000, 1002}));
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);  // until every rank is gone
  exec::ExitStatus killed;
  killed.signal = 15;
  killed.terminated_by = "signal";
  runner.statuses[home().status_file(id, 1, 0).string()] = killed;
  runner.statuses[home().status_file(id, 1, 2).string()] = killed;
  jobs->OnShimExit(runner.TokenOf(1000));
  jobs->OnShimExit(runner.TokenOf(1002));
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "ExitCode");
  EXPECT_EQ(View(id)->job.exit_code, 3);
}

TEST_F(JobManagerTest, AGangThatCannotStartEveryRankStartsNone) {
  FakeExecutor runner;
  runner.fail_start = true;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request("name: gang\nrun: {entrypoint: ./w.sh}\ncompute: {workers: 2, cpus: 500m, memory: 256Mi}\n")))->job.id;
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "SetupFailed");
}

TEST_F(JobManagerTest, EachRankGetsACgroupLeafAndAnOomKillIsNamed) {
  fs::path cgroupfs = root_ / "cgroupfs";
  fs::create_directories(cgroupfs);
  exec::Cgroup2Driver cgroups(cgroupfs);
  JobManagerOptions options = Options();
  options.cgroups = &cgroups;
  FakeExecutor runner;
  runner.home = home();
  JobManager jobs(home(), store_.get(), &runner, &policy_, &clock_, options, &publisher_);
  std::string id = (*jobs.Submit(Request("name: mem\nrun: {entrypoint: x}\ncompute: {cpus: 500m, memory: 1Gi}\n")))->job.id;
  ASSERT_EQ(runner.starts.size(), 1u);
  fs::path leaf = cgroupfs / (id + "-1-0");
  EXPECT_EQ(runner.starts[0].cgroup_dir, leaf.string());
  std::ifstream mem(leaf / "memory.max");
  std::string limit;
  mem >> limit;
  EXPECT_EQ(limit, "1073741824");
  std::ofstream(leaf / "memory.events") << "oom 1\noom_kill 1\n";
  exec::ExitStatus killed;
  killed.signal = 9;
  runner.statuses[StatusPath(id, 1)] = killed;
  jobs.OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "OOMKilled");
  EXPECT_THAT(View(id)->job.message, HasSubstr("1Gi per worker"));
  EXPECT_FALSE(fs::exists(leaf)) << "the leaf is removed with the attempt";
}

TEST_F(JobManagerTest, WithoutCgroupsRanksArePinnedToTheLeastLoadedCpus) {
  JobManagerOptions options = Options();
  options.cpu_ids = {4, 7};  // the CPUs this daemon may use
  FakeExecutor runner;
  runner.home = home();
  JobManager jobs(home(), store_.get(), &runner, &policy_, &clock_, options, &publisher_);
  std::string a = (*jobs.Submit(Request("name: a\nrun: {entrypoint: x}\ncompute: {cpus: 1, memory: 256Mi}\n")))->job.id;
  (*jobs.Submit(Request("name: b\nrun: {entrypoint: x}\ncompute: {cpus: 500m, memory: 256Mi}\n")));
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(runner.starts[0].cpu_list, "4");
  EXPECT_EQ(runner.starts[1].cpu_list, "7");
  EXPECT_EQ(runner.starts[0].rlimit_data, int64_t{256} << 20);
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(a, 1)] = ok;
  jobs.OnShimExit(runner.TokenOf(1000));
  (*jobs.Submit(Request("name: c\nrun: {entrypoint: x}\ncompute: {cpus: 500m, memory: 256Mi}\n")));
  ASSERT_EQ(runner.starts.size(), 3u);
  EXPECT_EQ(runner.starts[2].cpu_list, "4") << "CPU 4 was freed and is the least loaded";
}

// ---- recovery ------------------------------------------------------------

class RecoveryTest : public JobManagerTest {
 protected:
  // Submits one job with a first manager, leaving attempt 1 Running (pid 1000).
  std::string RunningJob() {
    FakeExecutor first;
    auto jobs = Manager(&first);
    return (*jobs->Submit(Request(kJob)))->job.id;
  }
};

TEST_F(RecoveryTest, ALiveShimIsReadopted) {
  std::string id = RunningJob();
  FakeExecutor runner;
  runner.lock_holders[LockPath(id, 1)] = 4242;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_TRUE(runner.starts.empty());
  EXPECT_EQ(runner.watched.size(), 1u);
  EXPECT_EQ(runner.watched.begin()->second, 4242);
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = ok;
  jobs->OnShimExit(runner.watched.begin()->first);
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
  EXPECT_EQ(View(id)->attempts.size(), 1u);
}

TEST_F(RecoveryTest, AnAttemptThatEndedMeanwhileGetsItsRealStatus) {
  std::string id = RunningJob();
  FakeExecutor runner;
  exec::ExitStatus failed;
  failed.exit_code = 5;
  runner.statuses[StatusPath(id, 1)] = failed;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.exit_code, 5);
  EXPECT_TRUE(runner.starts.empty());
}

TEST_F(RecoveryTest, APreemptedAttemptThatStopsAcrossARestartIsRequeued) {
  constexpr char kLow[] = "name: low\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n";
  constexpr char kHigh[] = "name: high\npriority: high\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n";
  std::string low, high;
  {
    FakeExecutor first;
    auto jobs = Manager(&first, /*preemption=*/true);
    low = (*jobs->Submit(Request(kLow)))->job.id;
    high = (*jobs->Submit(Request(kHigh)))->job.id;
    ASSERT_EQ(first.stopped, std::vector<int64_t>{1000}) << "low is preempted";
    ASSERT_EQ(View(high)->job.state, JobState::kQueued);
  }
  // The daemon restarts while low's shim is still stopping: the stop is
  // asked again and low is not picked as a victim a second time.
  FakeExecutor runner;
  runner.lock_holders[LockPath(low, 1)] = 4242;
  auto jobs = Manager(&runner, /*preemption=*/true);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(runner.stopped, std::vector<int64_t>{4242});
  EXPECT_TRUE(runner.starts.empty());
  // Its end, a SIGTERM, is a preemption, not a failure.
  exec::ExitStatus terminated;
  terminated.signal = 15;
  runner.statuses[StatusPath(low, 1)] = terminated;
  jobs->OnShimExit(runner.TokenOf(4242));
  EXPECT_EQ(View(low)->job.state, JobState::kQueued);
  ASSERT_EQ(View(low)->attempts.size(), 1u);
  EXPECT_EQ(View(low)->attempts[0].reason, "Preempted");
  EXPECT_EQ(View(low)->job.reason, "WaitingForQuota") << "high runs now";
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_EQ(runner.starts[0].ref.job_id, high);
}

TEST_F(RecoveryTest, AReadoptedAttemptKeepsTheLoadOfTheCpusItIsPinnedTo) {
  JobManagerOptions options = Options();
  options.cpu_ids = {4, 7};
  std::string a;
  {
    FakeExecutor first;
    first.home = home();
    JobManager jobs(home(), store_.get(), &first, &policy_, &clock_, options, &publisher_);
    a = (*jobs.Submit(Request("name: a\nrun: {entrypoint: x}\ncompute: {cpus: 1, memory: 256Mi}\n")))->job.id;
    ASSERT_EQ(first.starts.at(0).cpu_list, "4");
  }
  FakeExecutor runner;
  runner.lock_holders[LockPath(a, 1)] = 4242;
  runner.home = home();
  JobManager jobs(home(), store_.get(), &runner, &policy_, &clock_, options, &publisher_);
  ASSERT_TRUE(jobs.Recover().ok());
  (*jobs.Submit(Request("name: b\nrun: {entrypoint: x}\ncompute: {cpus: 500m, memory: 256Mi}\n")));
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_EQ(runner.starts[0].cpu_list, "7") << "CPU 4 still runs a";
  // When a ends, its CPU's load is given back.
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(a, 1)] = ok;
  jobs.OnShimExit(runner.TokenOf(4242));
  (*jobs.Submit(Request("name: c\nrun: {entrypoint: x}\ncompute: {cpus: 500m, memory: 256Mi}\n")));
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(runner.starts[1].cpu_list, "4");
}

TEST_F(RecoveryTest, AnAttemptOfAnEarlierBootIsLost) {
  std::string id = RunningJob();
  FakeExecutor runner;
  runner.rebooted = true;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  // The machine or the shim went away: an interruption, retried after a
  // backoff without charging retry.max_restarts.
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost");
  EXPECT_EQ(View(id)->job.interruptions, 1);
  EXPECT_EQ(View(id)->job.restarts, 0);
  EXPECT_EQ(View(id)->job.retry_reason, "node_lost");
  EXPECT_TRUE(runner.starts.empty());
}

TEST_F(RecoveryTest, AGangIsReadoptedRankByRank) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request("name: gang\nrun: {entrypoint: ./w.sh}\ncompute: {workers: 2, cpus: 500m, memory: 256Mi}\n")))->job.id;
  }
  FakeExecutor runner;
  runner.lock_holders[home().attempt_lock(id, 1, 0).string()] = 5000;  // rank 0 still runs
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[home().status_file(id, 1, 1).string()] = ok;  // rank 1 ended well meanwhile
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_TRUE(runner.starts.empty());
  EXPECT_TRUE(runner.stopped.empty());
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  runner.statuses[home().status_file(id, 1, 0).string()] = ok;
  jobs->OnShimExit(runner.TokenOf(5000));
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
}

TEST_F(RecoveryTest, AnAttemptThatNeverStartedRunsOnceUnderTheSameNumber) {
  // The first daemon died after committing "attempt 1 starting" and before
  // any shim existed.
  FakeExecutor first;
  first.fail_start = false;
  std::string id;
  {
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
  }
  auto records = *store_->LoadJobs();
  records[0].state = JobState::kAdmitted;
  ASSERT_TRUE(store_->UpdateJob(records[0]).ok());
  auto attempts = *store_->LoadAttempts();
  attempts[0].state = store::AttemptState::kStarting;
  attempts[0].shim_pid = 0;
  ASSERT_TRUE(store_->UpsertAttempt(attempts[0]).ok());

  FakeExecutor runner;
  runner.never_ran.insert(StatusPath(id, 1));  // no shim reserved a status
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_THAT(runner.starts[0].env, ::testing::Contains("TAU_ATTEMPT=1"));
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_EQ(View(id)->job.attempt, 1);
  auto events = *store_->LoadEvents(id, 0, 100);
  bool requeued = false;
  for (const auto& e : events) requeued = requeued || (e.type == "Requeued" && e.reason == "DaemonRestart");
  EXPECT_TRUE(requeued);
}

TEST_F(JobManagerTest, EndingAJobWithoutCheckpointsWritesNoCheckpointIndex) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  int writes = 0;
  store_->db()->AddWriteObserver([&](const Status& st) { writes += st.ok() ? 1 : 0; });
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = ok;
  jobs->OnShimExit(runner.TokenOf(1000));
  ASSERT_EQ(View(id)->job.state, JobState::kSucceeded);
  // The attempt's end, and the sealed evidence's digest; an empty index
  // is the same as none.
  EXPECT_EQ(writes, 2);
  EXPECT_EQ(View(id)->job.checkpoints, "");
}

TEST_F(JobManagerTest, TheApiUnpacksASnapshotOffTheControlLoop) {
  FakeExecutor runner;
  int unpacked = 0;
  bool unpacked_on_loop = false;
  tweak_ = [&](JobManagerOptions& o) {
    o.on_snapshot_unpacked = [&] {
      ++unpacked;
      unpacked_on_loop = unpacked_on_loop || ControlLoop::OnLoopThread();
    };
  };
  auto jobs = Manager(&runner);
  ControlLoop loop;
  auto job = SubmitOffLoop(loop, *jobs, Request(kJob));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(unpacked, 1);
  EXPECT_FALSE(unpacked_on_loop);
  EXPECT_TRUE(fs::exists(home().code_dir((*job)->job.id) / "run.sh"));
  // A refused submit leaves no folder behind.
  SubmitRequest bad = Request("name: b\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 64}\n");
  auto refused = SubmitOffLoop(loop, *jobs, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(unpacked, 2);
  size_t folders = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(home().root() / "jobs")) ++folders;
  EXPECT_EQ(folders, 1u);
  loop.Stop();
}

TEST_F(JobManagerTest, TheApiAssemblesALiveCapsuleOffTheControlLoop) {
  FakeExecutor runner;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool assembled_on_loop = false;
  tweak_ = [&](JobManagerOptions& o) {
    o.on_evidence_assembling = [&] {
      assembled_on_loop = ControlLoop::OnLoopThread();
      entered.set_value();
      released.wait();
    };
  };
  auto jobs = Manager(&runner);
  ControlLoop loop;
  auto submitted = loop.Call([&] { return jobs->Submit(Request(kJob)); });
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const std::string id = (*submitted)->job.id;
  ASSERT_EQ(View(id)->job.state, JobState::kRunning);

  auto capsule = std::async(std::launch::async, [&] { return EvidenceOffLoop(loop, *jobs, id); });
  // Hang guards, not timings: each wait ends at once when all is well.
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  // While the capsule's files are being read, the loop still serves.
  auto other = std::async(std::launch::async, [&] { return loop.Call([&] { return jobs->QueuesJson(); }); });
  const bool served = other.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  release.set_value();
  EXPECT_TRUE(served) << "a request on the loop waited for the evidence capsule";
  EXPECT_FALSE(assembled_on_loop);

  Result<std::string> text = capsule.get();
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, false);
  ASSERT_TRUE(json.is_object()) << *text;
  EXPECT_EQ(json["complete"], false);
  EXPECT_EQ(json["job"]["id"], id);
  ASSERT_TRUE(json["events"].is_array()) << *text;
  EXPECT_FALSE(json["events"].empty()) << "the events are read off the loop too";
  other.get();
  loop.Stop();
}

}  // namespace
}  // namespace tau::server
