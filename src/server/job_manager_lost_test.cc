// Attempts whose shim is gone without an exit status: nothing of them may
// run beside their retry, and an end nobody saw is not retried blindly.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exec/leftovers.h"
#include "server/execution/local_executor.h"
#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::HasSubstr;

class LostTest : public JobManagerTest {
 protected:
  // The newest started shim is gone without writing a status.
  void ShimGone(JobManager& jobs, FakeExecutor& runner) { jobs.OnShimExit(runner.TokenOf(runner.next_pid - 1)); }
};

TEST_F(LostTest, ARetryWaitsUntilEveryProcessOfTheLostAttemptIsGone) {
  FakeExecutor runner;
  runner.contained = true;  // a cgroup held the attempt: its emptiness is proof
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  ASSERT_EQ(runner.starts.size(), 1u);
  // kill -9 of the shim: the job's processes still run (no cgroup).
  runner.leftovers[StatusPath(id, 1)] = 2;
  ShimGone(*jobs, runner);
  ASSERT_EQ(runner.sweeps.size(), 1u);
  EXPECT_THAT(runner.sweeps[0].env, ::testing::UnorderedElementsAre("TAU_JOB_ID=" + id, "TAU_ATTEMPT=1",
                                                                    "TAU_WORKER_INDEX=0"));
  EXPECT_EQ(runner.sweeps[0].lock_path, LockPath(id, 1));
  EXPECT_EQ(View(id)->job.state, JobState::kRunning) << "its processes still run";
  EXPECT_TRUE(HasEvent(id, "ShimLost"));
  // A process stuck in the kernel outlives SIGKILL for a while.
  runner.leftovers[StatusPath(id, 1)] = 1;
  jobs->SweepLostRanks();
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  clock_.Advance(std::chrono::minutes(10));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u) << "no second attempt while the first one's processes live";
  runner.leftovers[StatusPath(id, 1)] = 0;
  jobs->SweepLostRanks();
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost");
  EXPECT_THAT(View(id)->job.message, HasSubstr("the processes it left running were killed"));
  EXPECT_EQ(View(id)->job.retry_reason, "node_lost");
  clock_.Advance(std::chrono::minutes(10));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 2u);
}

TEST_F(LostTest, AnEndNobodySawIsUnknownAndNotRetried) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  // The shim could not write its status (say the disk is full) and nothing
  // of the job runs: it may have finished.
  ShimGone(*jobs, runner);
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "Unknown");
  EXPECT_THAT(v->job.message, HasSubstr("how it ended is unknown"));
  EXPECT_THAT(v->job.message, HasSubstr("not retried: the spec has no retry.on"));
  EXPECT_EQ(v->attempts.back().reason, "Unknown");
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u);
}

TEST_F(LostTest, AnUnknownEndIsRetriedWhenRetryOnListsIt) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kJob) + "retry: {max_restarts: 1, on: [unknown]}\n")))->job.id;
  ShimGone(*jobs, runner);
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Unknown");
  EXPECT_EQ(View(id)->job.restarts, 1) << "charged to retry.max_restarts";
  EXPECT_EQ(View(id)->job.interruptions, 0);
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
}

TEST_F(LostTest, AShimThatDiedBeforeStartingTheJobIsLost) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  runner.never_ran.insert(StatusPath(id, 1));
  ShimGone(*jobs, runner);
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost");
  EXPECT_THAT(View(id)->job.message, HasSubstr("before it started the job"));
}

TEST_F(LostTest, ACancelWhileTheLeftoversAreKilledEndsCancelled) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  runner.leftovers[StatusPath(id, 1)] = 1;
  ShimGone(*jobs, runner);
  ASSERT_TRUE(jobs->Cancel(id).ok());
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  runner.leftovers[StatusPath(id, 1)] = 0;
  jobs->SweepLostRanks();
  EXPECT_EQ(View(id)->job.state, JobState::kCancelled);
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u);
}

TEST_F(LostTest, ARestartedDaemonKillsWhatADeadShimLeftBeforeRetrying) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
  }
  // The daemon and the shim died; the job's process still runs.
  FakeExecutor runner;
  runner.contained = true;
  runner.leftovers[StatusPath(id, 1)] = 1;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_TRUE(runner.starts.empty());
  runner.leftovers[StatusPath(id, 1)] = 0;
  jobs->SweepLostRanks();
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost");
}

TEST_F(LostTest, ARestartedDaemonDoesNotRequeueAStartingAttemptWhoseJobRan) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
  }
  // The store says Starting (the daemon died between starting the shim and
  // recording it); the shim died too, after it started the job.
  {
    auto attempts = *store_->LoadAttempts();
    ASSERT_EQ(attempts.size(), 1u);
    store::AttemptRecord a = attempts[0];
    a.state = store::AttemptState::kStarting;
    ASSERT_TRUE(store_->UpsertAttempt(a).ok());
  }
  FakeExecutor runner;
  runner.contained = true;
  runner.leftovers[StatusPath(id, 1)] = 1;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_TRUE(runner.starts.empty()) << "the job's process still runs";
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  runner.leftovers[StatusPath(id, 1)] = 0;
  jobs->SweepLostRanks();
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost");
}

TEST_F(LostTest, AGangEndsLostOnlyOnceTheLostRanksProcessesAndTheOtherRanksAreGone) {
  FakeExecutor runner;
  runner.contained = true;
  auto jobs = Manager(&runner);
  std::string id =
      (*jobs->Submit(Request("name: gang\nrun: {entrypoint: ./w.sh}\ncompute: {workers: 2, cpus: 500m, memory: 256Mi}\n")))
          ->job.id;
  ASSERT_EQ(runner.starts.size(), 2u);
  const int64_t rank0 = runner.next_pid - 2, rank1 = runner.next_pid - 1;
  const std::string status1 = home().status_file(id, 1, 1).string();
  runner.leftovers[status1] = 3;
  jobs->OnShimExit(runner.TokenOf(rank1));
  ASSERT_FALSE(runner.sweeps.empty());
  EXPECT_THAT(runner.sweeps.back().env, ::testing::Contains("TAU_WORKER_INDEX=1"));
  EXPECT_THAT(runner.stopped, ::testing::Contains(rank0)) << "the rest of the gang is stopped at once";
  // Rank 0 stops as asked; rank 1's leftovers are still dying.
  exec::ExitStatus stopped;
  stopped.signal = 15;
  stopped.terminated_by = "signal";
  runner.statuses[home().status_file(id, 1, 0).string()] = stopped;
  jobs->OnShimExit(runner.TokenOf(rank0));
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  runner.leftovers[status1] = 0;
  jobs->SweepLostRanks();
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost") << View(id)->job.message;
}

TEST_F(LostTest, AShimLostWhileItsJobRanStaysLostWhenTheDaemonDiesBeforeTheLeftoversAreGone) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
    first.leftovers[StatusPath(id, 1)] = 3;
    ShimGone(*jobs, first);
    ASSERT_TRUE(HasEvent(id, "ShimLost"));
    ASSERT_EQ(View(id)->job.state, JobState::kRunning);
  }
  // The daemon died; its SIGKILL took the job's processes with it.
  FakeExecutor runner;
  runner.contained = true;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kRetrying);
  EXPECT_EQ(v->job.reason, "Lost") << v->job.message;
  EXPECT_THAT(v->job.message, HasSubstr("the processes it left running were killed"));
  clock_.Advance(std::chrono::minutes(10));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u) << "retried";
}

TEST_F(LostTest, AGangsTeardownIsNotTakenForItsFailureWhenTheDaemonDiesDuringIt) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request("name: gang\nrun: {entrypoint: ./w.sh}\ncompute: {workers: 2, cpus: 500m, memory: 256Mi}\n")))
             ->job.id;
    ASSERT_EQ(first.starts.size(), 2u);
    first.leftovers[home().status_file(id, 1, 1).string()] = 3;
    jobs->OnShimExit(first.TokenOf(first.next_pid - 1));
    ASSERT_THAT(first.stopped, ::testing::Contains(first.next_pid - 2));
  }
  // Rank 0 ended by the teardown's SIGTERM while no daemon ran.
  FakeExecutor runner;
  runner.contained = true;
  exec::ExitStatus stopped;
  stopped.exit_code = 143;
  stopped.signal = 15;
  stopped.terminated_by = "signal";
  runner.statuses[home().status_file(id, 1, 0).string()] = stopped;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost") << View(id)->job.message;
}

TEST_F(LostTest, WithoutACgroupAnAttemptWhoseLeftoversWereKilledIsUnknownAndNotRetried) {
  FakeExecutor runner;  // no cgroup: a process that left the session with a cleared environment goes unseen
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  runner.leftovers[StatusPath(id, 1)] = 2;
  ShimGone(*jobs, runner);
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  runner.leftovers[StatusPath(id, 1)] = 0;
  jobs->SweepLostRanks();
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "Unknown");
  EXPECT_THAT(v->job.message, HasSubstr("the processes it left running were killed, but no cgroup held the attempt"));
  EXPECT_THAT(v->job.message, HasSubstr("cleared its environment would not have been found: it may still run"));
  EXPECT_THAT(v->job.message, HasSubstr("not retried: the spec has no retry.on"));
  EXPECT_EQ(v->attempts.back().reason, "Unknown");
  EXPECT_TRUE(HasEvent(id, "ShimLost", "2 processes of the job still ran"));
  EXPECT_TRUE(HasEvent(id, "Failed", "no cgroup held the attempt"));
  auto why = jobs->WhyJson(id);
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(*why, HasSubstr("no cgroup held the attempt"));
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u) << "retried beside what may still run of it";
}

TEST_F(LostTest, WithoutACgroupAKilledAttemptIsRetriedWhenRetryOnListsUnknown) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kJob) + "retry: {max_restarts: 1, on: [unknown]}\n")))->job.id;
  runner.killed[StatusPath(id, 1)] = 1;
  ShimGone(*jobs, runner);
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Unknown");
  EXPECT_EQ(View(id)->job.restarts, 1) << "the user's retry, charged to retry.max_restarts";
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 2u);
}

TEST_F(LostTest, ARestartedDaemonDoesNotRetryAnAttemptLostWhileRunningThatNoCgroupHeld) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
    first.leftovers[StatusPath(id, 1)] = 3;
    ShimGone(*jobs, first);
    ASSERT_TRUE(HasEvent(id, "ShimLost"));
  }
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "Unknown") << v->job.message;
  EXPECT_THAT(v->job.message, HasSubstr("no cgroup held the attempt"));
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_TRUE(runner.starts.empty());
}

TEST_F(LostTest, LeftoversKilledAndGoneWithinOneSweepEndTheAttemptAtOnce) {
  FakeExecutor runner;
  runner.contained = true;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  runner.killed[StatusPath(id, 1)] = 3;  // found, killed, and gone before the sweep returned
  ShimGone(*jobs, runner);
  EXPECT_EQ(runner.sweeps.size(), 1u);
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost");
  EXPECT_TRUE(HasEvent(id, "ShimLost", "3 processes of the job still ran; killing them"));
}

TEST_F(LostTest, TheLossOfARankWhoseJobStillRanIsCommittedBeforeAnythingOfItIsKilled) {
  FakeExecutor runner;
  runner.contained = true;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  runner.killed[StatusPath(id, 1)] = 2;
  bool recorded_at_kill = false;
  // A daemon killed as the sweep kills must find the record on restart:
  // otherwise nothing is left and it takes the attempt for an end unseen.
  runner.on_sweep = [&](const RankRef&) { recorded_at_kill = HasEvent(id, "ShimLost", "2 processes of the job"); };
  ShimGone(*jobs, runner);
  ASSERT_EQ(runner.counts.size(), 1u);
  ASSERT_EQ(runner.sweeps.size(), 1u);
  EXPECT_TRUE(recorded_at_kill);
  EXPECT_EQ(View(id)->job.reason, "Lost");
}

TEST_F(LostTest, AStatusFileThatIsNotOneIsAnUnknownEndNeitherASetupFailureNorANeverStartedJob) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  runner.status_errors[StatusPath(id, 1)] =
      InvalidArgumentError("status file " + StatusPath(id, 1) + ".tmp is not a regular file (a fifo)");
  runner.never_ran.insert(StatusPath(id, 1));  // and no reservation is left
  ShimGone(*jobs, runner);
  ASSERT_EQ(runner.sweeps.size(), 1u) << "what may be left of it is killed first";
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "Unknown") << v->job.message;
  EXPECT_THAT(v->job.message, HasSubstr("its exit status cannot be read: status file " + StatusPath(id, 1) +
                                        ".tmp is not a regular file (a fifo); the job may have run"));
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u);
}

TEST_F(LostTest, AStatusUnreadableForAShortageOfDescriptorsIsReadAgainNotConcluded) {
  FakeExecutor runner;
  std::vector<std::function<void()>> timers;
  std::vector<std::chrono::milliseconds> armed;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [&](std::chrono::milliseconds delay, std::function<void()> task) {
      armed.push_back(delay);
      timers.push_back(std::move(task));
    };
  };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  // The job ran to its end and the shim wrote so; the daemon, for a moment
  // out of descriptors, cannot open the file.
  exec::ExitStatus ended;
  ended.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = ended;
  runner.status_errors[StatusPath(id, 1)] = ErrnoError(EMFILE, "read " + StatusPath(id, 1));
  ShimGone(*jobs, runner);
  EXPECT_EQ(View(id)->job.state, JobState::kRunning) << "nothing concluded: " << View(id)->job.message;
  EXPECT_TRUE(runner.sweeps.empty()) << "nothing of it is taken for lost";
  ASSERT_EQ(timers.size(), 1u);
  EXPECT_EQ(armed[0], JobManager::kStatusRereadDelay);
  // Still short: read again later.
  auto again = std::move(timers.back());
  timers.pop_back();
  again();
  ASSERT_EQ(timers.size(), 1u);
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  // The shortage ends: the status is read, and the job succeeded, once.
  runner.status_errors.erase(StatusPath(id, 1));
  auto last = std::move(timers.back());
  timers.pop_back();
  last();
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded) << View(id)->job.message;
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u);
}

TEST_F(LostTest, ARestartedDaemonTakesAStatusFileThatIsNotOneForAJobThatRan) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
  }
  {
    // The daemon died before it recorded the start.
    auto attempts = *store_->LoadAttempts();
    ASSERT_EQ(attempts.size(), 1u);
    store::AttemptRecord a = attempts[0];
    a.state = store::AttemptState::kStarting;
    ASSERT_TRUE(store_->UpsertAttempt(a).ok());
  }
  FakeExecutor runner;
  runner.status_errors[StatusPath(id, 1)] = InvalidArgumentError("status file is not a regular file (a fifo)");
  runner.never_ran.insert(StatusPath(id, 1));
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_TRUE(runner.starts.empty()) << "queued again as if it had never started";
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "Unknown");
}

TEST_F(LostTest, ARestartedDaemonFindsTheLockOfAShimAnEarlierVersionStartedInTheJobsFolder) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
  }
  const std::string legacy = home().legacy_attempt_lock(id, 1).string();
  std::ofstream(legacy) << "4242 1 boot\n";
  FakeExecutor runner;
  runner.lock_holders[legacy] = 4242;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_TRUE(runner.sweeps.empty()) << "its live shim was taken for a lost one";
  EXPECT_THAT(runner.watched, ::testing::Contains(::testing::Pair(::testing::_, 4242)));
}

// The local executor's sweep of real files: the shim's record of the job's
// start counts even when the job removed its status reservation.
TEST(LocalExecutorSweep, TheShimsRecordOfTheStartCountsWhenTheReservationIsGone) {
  const fs::path dir = fs::temp_directory_path() / ("tau-sweep-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  RankSweep sweep;
  sweep.lock_path = (dir / "rank-0.lock").string();
  sweep.status_path = (dir / "rank-0.status.json").string();  // never created: the job removed it
  sweep.env = {"TAU_JOB_ID=j_sweeptest01", "TAU_ATTEMPT=1", "TAU_WORKER_INDEX=0"};
  // A shim pid beyond pid_max: no session of that id, nothing to kill.
  std::ofstream(sweep.lock_path) << "999999999 1 " << exec::CurrentBootId() << " started\n";
  RankRemains remains = LocalExecutor::SweepAt(sweep);
  EXPECT_TRUE(remains.may_have_run);
  EXPECT_EQ(remains.alive, 0);
  EXPECT_FALSE(remains.contained);
  std::ofstream(sweep.lock_path, std::ios::trunc) << "999999999 1 " << exec::CurrentBootId() << "\n";
  EXPECT_FALSE(LocalExecutor::SweepAt(sweep).may_have_run) << "no record of a start and no reservation: never started";
  fs::remove_all(dir);
}

// The status file lies in the job's folder: a job can write one of its own
// there ("exit 1", which retry.on retries) and kill its shim, and run on.
TEST_F(LostTest, AStatusItsShimDidNotRecordWritingIsNotBelievedWhileTheJobRanOn) {
  FakeExecutor runner;  // no cgroup
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kJob) + "retry: {max_restarts: 2, on: [\"exit:1\"]}\n")))->job.id;
  exec::ExitStatus forged;
  forged.exit_code = 1;
  runner.statuses[StatusPath(id, 1)] = forged;
  runner.unrecorded_status.insert(LockPath(id, 1));
  runner.killed[StatusPath(id, 1)] = 2;
  ShimGone(*jobs, runner);
  ASSERT_EQ(runner.sweeps.size(), 1u) << "what is left of the attempt is killed before its status is believed";
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "Unknown");
  EXPECT_THAT(v->job.message, HasSubstr("the processes it left running were killed"));
  EXPECT_TRUE(HasEvent(id, "ShimLost", "2 processes of the job still ran"));
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u) << "retried beside the attempt that wrote its own status";
}

TEST_F(LostTest, AStatusItsShimDidNotRecordWritingIsAnUnknownEndEvenWhenNothingOfTheJobRanOn) {
  FakeExecutor runner;  // no cgroup: a copy of the job that hid would not be found
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kJob) + "retry: {max_restarts: 2, on: [\"exit:1\"]}\n")))->job.id;
  exec::ExitStatus forged;
  forged.exit_code = 1;
  runner.statuses[StatusPath(id, 1)] = forged;
  runner.unrecorded_status.insert(LockPath(id, 1));
  ShimGone(*jobs, runner);
  EXPECT_EQ(runner.sweeps.size(), 1u);
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "Unknown");
  EXPECT_THAT(v->job.message, HasSubstr("without recording that it wrote the exit status in the job's folder (exit "
                                        "code 1), which the job may have written itself"));
  EXPECT_FALSE(v->job.exit_code.has_value());
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u);
}

TEST_F(LostTest, AStatusItsShimRecordedWritingIsTakenWithoutASweep) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  exec::ExitStatus status;
  status.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = status;
  ShimGone(*jobs, runner);
  EXPECT_TRUE(runner.sweeps.empty());
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
}

TEST_F(LostTest, ARestartedDaemonDoesNotBelieveAStatusItsShimDidNotRecordWhileTheJobRunsOn) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(std::string(kJob) + "retry: {max_restarts: 2, on: [\"exit:1\"]}\n")))->job.id;
  }
  // The job wrote a status of its own and killed its shim; the daemon died too.
  FakeExecutor runner;
  exec::ExitStatus forged;
  forged.exit_code = 1;
  runner.statuses[StatusPath(id, 1)] = forged;
  runner.unrecorded_status.insert(LockPath(id, 1));
  runner.leftovers[StatusPath(id, 1)] = 1;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(View(id)->job.state, JobState::kRunning) << "its process still runs";
  runner.leftovers[StatusPath(id, 1)] = 0;
  jobs->SweepLostRanks();
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "Unknown");
  clock_.Advance(std::chrono::hours(1));
  jobs->WakeRetries();
  EXPECT_TRUE(runner.starts.empty());
}

// A job can stop its own shim (SIGSTOP): then nothing enforces a cancel's
// grace period or limits.max_runtime, and the job would hold its
// resources for ever.
class ShimBackstopTest : public LostTest {
 protected:
  void SetUp() override {
    LostTest::SetUp();
    tweak_ = [this](JobManagerOptions& o) {
      o.after = [this](std::chrono::milliseconds delay, std::function<void()> f) {
        timers_.push_back({delay, std::move(f)});
      };
    };
  }
  // Runs the timers armed for `delay`; returns how many.
  int Fire(std::chrono::milliseconds delay) {
    int fired = 0;
    auto timers = std::move(timers_);
    timers_.clear();
    for (auto& [d, f] : timers) {
      if (d == delay) {
        f();
        ++fired;
      } else {
        timers_.push_back({d, std::move(f)});
      }
    }
    return fired;
  }
  std::vector<std::pair<std::chrono::milliseconds, std::function<void()>>> timers_;
};

TEST_F(ShimBackstopTest, AShimThatDoesNotEndItsCancelledJobIsKilledAfterTheGracePeriod) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kJob) + "checkpoint: {grace_period: 2s}\n")))->job.id;
  const int64_t shim = runner.next_pid - 1;
  ASSERT_TRUE(jobs->Cancel(id).ok());
  ASSERT_EQ(runner.stopped, std::vector<int64_t>{shim});
  EXPECT_TRUE(runner.killed_shims.empty());
  ASSERT_EQ(Fire(std::chrono::seconds(12)), 1) << "the grace period and a margin";
  EXPECT_EQ(runner.killed_shims, std::vector<int64_t>{shim});
  // The killed shim left the job running: swept, then the job ends.
  runner.killed[StatusPath(id, 1)] = 1;
  ShimGone(*jobs, runner);
  EXPECT_EQ(View(id)->job.state, JobState::kCancelled);
}

TEST_F(ShimBackstopTest, AShimThatEndedItsJobInTimeIsNotKilled) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kJob) + "checkpoint: {grace_period: 2s}\n")))->job.id;
  ASSERT_TRUE(jobs->Cancel(id).ok());
  exec::ExitStatus terminated;
  terminated.signal = 15;
  terminated.terminated_by = "signal";
  runner.statuses[StatusPath(id, 1)] = terminated;
  ShimGone(*jobs, runner);
  EXPECT_EQ(View(id)->job.state, JobState::kCancelled);
  EXPECT_EQ(Fire(std::chrono::seconds(12)), 1);
  EXPECT_TRUE(runner.killed_shims.empty());
}

TEST_F(ShimBackstopTest, AShimStillThereAfterMaxRuntimeAndItsGracePeriodIsKilledAndTheJobEndsAtItsDeadline) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kJob) +
                                          "checkpoint: {grace_period: 2s}\nlimits: {max_runtime: 1m}\n")))->job.id;
  const int64_t shim = runner.next_pid - 1;
  ASSERT_EQ(Fire(std::chrono::seconds(72)), 1) << "max_runtime, the grace period and a margin";
  EXPECT_EQ(runner.killed_shims, std::vector<int64_t>{shim});
  runner.killed[StatusPath(id, 1)] = 1;
  ShimGone(*jobs, runner);
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "DeadlineExceeded");
  EXPECT_THAT(v->job.message, HasSubstr("its tau-shim did not stop it, and was killed"));
}

}  // namespace
}  // namespace tau::server
