// The JobManager on a full disk: the store's writes fail (a FaultVfs) and
// the manager neither spins, nor loses a job, nor stops cancelling.

#include "server/api_http.h"
#include "server/cancel_request.h"
#include "server/job_manager_test_fixture.h"
#include "server/submit_off_loop.h"
#include "store/fault_vfs.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::HasSubstr;

class DiskFullTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    if (HasFatalFailure()) return;
    auto vfs = store::FaultVfs::Register("tau-jm-disk-full");
    ASSERT_TRUE(vfs.ok()) << vfs.status().ToString();
    vfs_ = *vfs;
    vfs_->SetDiskFull(false);
    store_.reset();
    auto reopened = store::JobStore::Open((root_ / "home" / "taugrid.db").string(), vfs_->name());
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    store_ = std::move(*reopened);
  }
  void TearDown() override {
    vfs_->SetDiskFull(false);
    JobManagerTest::TearDown();
  }
  store::FaultVfs* vfs_ = nullptr;
};

constexpr char kRetryJob[] =
    "name: r\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n"
    "retry:\n  max_restarts: 2\n  on: [\"exit:3\"]\n  backoff: 10s\n";

TEST_F(DiskFullTest, ARequeueThatCannotBeCommittedIsTriedAgainLaterNotAtOnce) {
  FakeExecutor runner;
  std::vector<std::chrono::milliseconds> armed;
  std::function<void()> timer;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [&](std::chrono::milliseconds delay, std::function<void()> task) {
      armed.push_back(delay);
      timer = std::move(task);
    };
  };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  exec::ExitStatus s;
  s.exit_code = 3;
  runner.statuses[StatusPath(id, 1)] = s;
  jobs->OnShimExit(runner.TokenOf(1000));
  ASSERT_EQ(View(id)->job.state, JobState::kRetrying);
  ASSERT_EQ(armed.size(), 1u);

  vfs_->SetDiskFull(true);
  clock_.Advance(std::chrono::seconds(10));
  armed.clear();
  timer();  // the backoff is over; the requeue cannot be committed
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  ASSERT_FALSE(armed.empty());
  for (const auto& delay : armed) {
    EXPECT_EQ(delay, JobManager::kStoreRetryDelay) << "a failed commit re-armed a timer at once: a busy loop";
  }
  EXPECT_EQ(publisher_.Current()->store_condition, "DiskFull");
  EXPECT_THAT(publisher_.Current()->store_message, HasSubstr("full"));

  vfs_->SetDiskFull(false);
  clock_.Advance(JobManager::kStoreRetryDelay);
  timer();
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);  // requeued and started again
  EXPECT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(publisher_.Current()->store_condition, "");
}

TEST_F(DiskFullTest, ACancelThatCannotBeCommittedIsRefusedButTheJobIsStillSignalled) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string running = (*jobs->Submit(Request(kJob)))->job.id;
  ASSERT_EQ(View(running)->job.state, JobState::kRunning);
  std::string queued = (*jobs->Submit(Request("name: q\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))->job.id;
  ASSERT_EQ(View(queued)->job.state, JobState::kQueued);

  vfs_->SetDiskFull(true);
  auto cancelled = jobs->Cancel(running);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(cancelled.status().message(), HasSubstr("SIGTERM was sent to the job anyway"));
  EXPECT_THAT(runner.stopped, ::testing::Contains(1000));

  auto queued_cancel = jobs->Cancel(queued);
  ASSERT_FALSE(queued_cancel.ok());
  EXPECT_THAT(queued_cancel.status().message(), HasSubstr("refused and the job stays Queued"));
  EXPECT_EQ(View(queued)->job.state, JobState::kQueued);

  // The signalled job ends Cancelled once its end can be written.
  vfs_->SetDiskFull(false);
  exec::ExitStatus s;
  s.signal = 15;
  runner.statuses[StatusPath(running, 1)] = s;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(running)->job.state, JobState::kCancelled);
  auto reloaded = store_->LoadJobs();
  ASSERT_TRUE(reloaded.ok());
  for (const auto& j : *reloaded) {
    if (j.id == running) {
      EXPECT_EQ(j.state, JobState::kCancelled);
    }
  }
}

TEST_F(DiskFullTest, AnEndThatCannotBeCommittedIsKeptAndCommittedOnceSpaceReturns) {
  FakeExecutor runner;
  std::vector<std::function<void()>> deferred;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [](std::chrono::milliseconds, std::function<void()>) {};
    o.defer = [&](std::function<void()> task) { deferred.push_back(std::move(task)); };
  };
  auto run_deferred = [&] {
    while (!deferred.empty()) {
      auto tasks = std::move(deferred);
      deferred.clear();
      for (auto& task : tasks) task();
    }
  };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  run_deferred();  // the admission pass
  ASSERT_EQ(View(id)->job.state, JobState::kRunning);
  const size_t events_before = store_->LoadEvents(id, 0, 1000)->size();

  // The job ends while the disk is full: its end cannot be written.
  vfs_->SetDiskFull(true);
  exec::ExitStatus s;
  s.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = s;
  jobs->OnShimExit(runner.TokenOf(1000));
  run_deferred();  // where an ended job would be let go of
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded) << "shown as it ended, not as the database still has it";
  EXPECT_TRUE(View(id)->job.evidence.empty()) << "sealed only once its end is recorded";
  std::vector<store::JobRecord> records = *store_->LoadJobs();
  for (const auto& rec : records) {
    EXPECT_EQ(rec.state, JobState::kRunning) << "nothing was written";
  }

  // Space returns: the next retry writes the end, once.
  vfs_->SetDiskFull(false);
  clock_.Advance(JobManager::kStoreRetryDelay);
  jobs->RetryStoreWrites();
  run_deferred();
  EXPECT_FALSE(jobs->DiskFull());
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
  EXPECT_FALSE(View(id)->job.evidence.empty()) << "sealed once the end is recorded";
  records = *store_->LoadJobs();
  for (const auto& rec : records) {
    EXPECT_EQ(rec.state, JobState::kSucceeded) << rec.id;
    EXPECT_EQ(rec.exit_code, 0);
  }
  std::vector<store::AttemptRecord> attempts = *store_->LoadAttempts();
  for (const auto& a : attempts) {
    EXPECT_EQ(a.state, store::AttemptState::kSucceeded) << a.job_id << " attempt " << a.number;
  }
  std::vector<store::EventRecord> events = *store_->LoadEvents(id, 0, 1000);
  ASSERT_EQ(events.size(), events_before + 1);
  EXPECT_EQ(events.back().type, "Succeeded");
  jobs->RetryStoreWrites();
  EXPECT_EQ(store_->LoadEvents(id, 0, 1000)->size(), events_before + 1) << "written once";
}

TEST_F(DiskFullTest, AnEndNotWrittenYetIsCountedInItsStateOnceAndOnlyOnce) {
  FakeExecutor runner;
  std::vector<std::function<void()>> deferred;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [](std::chrono::milliseconds, std::function<void()>) {};
    o.defer = [&](std::function<void()> task) { deferred.push_back(std::move(task)); };
  };
  auto run_deferred = [&] {
    while (!deferred.empty()) {
      auto tasks = std::move(deferred);
      deferred.clear();
      for (auto& task : tasks) task();
    }
  };
  // What GET /api/v1/info says of `state`.
  auto counted = [&](JobState state) -> int64_t {
    auto view = publisher_.Current();
    if (!view->history) {
      ADD_FAILURE() << "no history in the view";
      return -1;
    }
    auto counts = view->history->CountByState(*view);
    if (!counts.ok()) {
      ADD_FAILURE() << counts.status().ToString();
      return -1;
    }
    for (const auto& [name, n] : *counts) {
      if (name == store::JobStateName(state)) return n;
    }
    return -1;
  };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  run_deferred();
  ASSERT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_EQ(counted(JobState::kRunning), 1);

  vfs_->SetDiskFull(true);
  exec::ExitStatus s;
  s.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = s;
  jobs->OnShimExit(runner.TokenOf(1000));
  run_deferred();
  ASSERT_EQ(View(id)->job.state, JobState::kSucceeded);
  EXPECT_EQ(counted(JobState::kSucceeded), 1) << "shown ended, so counted ended, though not written";
  EXPECT_EQ(counted(JobState::kRunning), 0);

  vfs_->SetDiskFull(false);
  clock_.Advance(JobManager::kStoreRetryDelay);
  jobs->RetryStoreWrites();
  run_deferred();
  ASSERT_FALSE(jobs->DiskFull());
  EXPECT_EQ(counted(JobState::kSucceeded), 1) << "written: counted from the database, not twice";
  EXPECT_EQ(counted(JobState::kRunning), 0);
}

TEST_F(DiskFullTest, ASubmitSentAgainWithItsRequestIdGetsItsJobOnAFullDisk) {
  FakeExecutor runner;
  int unpacked = 0;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [](std::chrono::milliseconds, std::function<void()>) {};
    o.on_snapshot_unpacked = [&] { ++unpacked; };
  };
  auto jobs = Manager(&runner);
  ControlLoop loop;
  SubmitRequest req = Request(kJob);
  req.request_id = "r_full";
  auto first = SubmitOffLoop(loop, *jobs, req);
  ASSERT_TRUE(first.ok()) << first.status().ToString();

  // The answer was lost, and meanwhile the disk filled up.
  vfs_->SetDiskFull(true);
  auto other = SubmitOffLoop(loop, *jobs, Request(kJob));
  ASSERT_FALSE(other.ok());
  ASSERT_TRUE(loop.Call([&] { return jobs->DiskFull(); }));
  unpacked = 0;
  auto again = SubmitOffLoop(loop, *jobs, req);
  ASSERT_TRUE(again.ok()) << "the job exists: " << again.status().ToString();
  EXPECT_EQ((*again)->job.id, (*first)->job.id);
  EXPECT_EQ(unpacked, 0) << "a repeat unpacks no snapshot (a full disk has no room for it)";
  // Another spec under the same id is still refused.
  SubmitRequest changed = Request("name: changed\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n");
  changed.request_id = "r_full";
  auto refused = SubmitOffLoop(loop, *jobs, changed);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  loop.Stop();
}

TEST_F(DiskFullTest, ADaemonStartingOnAFullDiskServesWhatItHasAndCatchesUpWhenSpaceReturns) {
  // Before the restart: one attempt no shim ever ran, and one whose shim
  // runs though its start was never recorded.
  std::string unstarted;
  std::string running;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    unstarted = (*jobs->Submit(Request(kJob)))->job.id;
    running = (*jobs->Submit(Request(kJob)))->job.id;
  }
  std::vector<store::JobRecord> records = *store_->LoadJobs();
  for (auto rec : records) {
    rec.state = JobState::kAdmitted;
    ASSERT_TRUE(store_->UpdateJob(rec).ok());
  }
  std::vector<store::AttemptRecord> attempts = *store_->LoadAttempts();
  for (auto a : attempts) {
    a.state = store::AttemptState::kStarting;
    a.shim_pid = 0;
    ASSERT_TRUE(store_->UpsertAttempt(a).ok());
  }
  const size_t events_before = store_->LoadEvents("", 0, 1000)->size();

  FakeExecutor runner;
  runner.never_ran.insert(StatusPath(unstarted, 1));
  runner.lock_holders[LockPath(running, 1)] = 4242;
  std::vector<std::chrono::milliseconds> armed;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [&](std::chrono::milliseconds delay, std::function<void()>) { armed.push_back(delay); };
  };
  vfs_->SetDiskFull(true);
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok()) << "a full disk does not stop the daemon";
  EXPECT_TRUE(jobs->DiskFull());
  EXPECT_EQ(publisher_.Current()->store_condition, "DiskFull");
  EXPECT_THAT(publisher_.Current()->store_message, HasSubstr("full"));
  ASSERT_FALSE(armed.empty());
  for (const auto& delay : armed) {
    EXPECT_EQ(delay, JobManager::kStoreRetryDelay);
  }
  // What it has, it serves: the running job is adopted; the other is not
  // queued (nor started) before its requeue is committed.
  EXPECT_EQ(View(running)->job.state, JobState::kRunning);
  EXPECT_EQ(View(unstarted)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(unstarted)->job.reason, "DaemonRestart");
  EXPECT_TRUE(runner.starts.empty());
  // A submit is refused, naming the full disk.
  auto refused = jobs->Submit(Request(kJob));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("taugrid.db is full"));
  EXPECT_TRUE(IsDiskFull(refused.status())) << "the API answers it 507";
  EXPECT_EQ(store_->LoadJobs()->size(), 2u);
  EXPECT_EQ(store_->LoadEvents("", 0, 1000)->size(), events_before) << "nothing half-written";

  // Space returns: the retry records the adopted start and ends DiskFull;
  // the requeue is committed and the job runs.
  vfs_->SetDiskFull(false);
  clock_.Advance(JobManager::kStoreRetryDelay);
  jobs->RetryStoreWrites();
  EXPECT_FALSE(jobs->DiskFull());
  EXPECT_EQ(publisher_.Current()->store_condition, "");
  jobs->WakeRetries();
  EXPECT_EQ(View(unstarted)->job.state, JobState::kRunning);
  EXPECT_EQ(runner.starts.size(), 1u);
  records = *store_->LoadJobs();
  for (const auto& rec : records) {
    EXPECT_EQ(rec.state, JobState::kRunning) << rec.id;
  }
  bool started = false;
  bool requeued = false;
  std::vector<store::EventRecord> events = *store_->LoadEvents("", 0, 1000);
  for (const auto& e : events) {
    started = started || (e.job_id == running && e.type == "Started");
    requeued = requeued || (e.job_id == unstarted && e.type == "Requeued" && e.reason == "DaemonRestart");
  }
  EXPECT_TRUE(started);
  EXPECT_TRUE(requeued);
  EXPECT_TRUE(jobs->Submit(Request("name: n\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 100m}\n")).ok());
}

TEST_F(DiskFullTest, ACancelTheDatabaseCouldNotRecordIsHonouredByARestartedDaemon) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
    ASSERT_EQ(View(id)->job.state, JobState::kRunning);
    vfs_->SetDiskFull(true);
    auto cancelled = jobs->Cancel(id);
    ASSERT_FALSE(cancelled.ok());
    EXPECT_THAT(cancelled.status().message(), HasSubstr("SIGTERM was sent to the job anyway"));
    EXPECT_THAT(cancelled.status().message(), HasSubstr("the cancel is kept on disk"));
    EXPECT_THAT(first.stopped, ::testing::Contains(1000));
  }  // the daemon goes down before the database could record the cancel
  const std::vector<store::JobRecord> before = *store_->LoadJobs();
  for (const auto& rec : before) {
    ASSERT_FALSE(rec.cancel_requested) << "the database never heard of it";
  }

  // The next daemon adopts the running shim, asks it to stop again, and
  // counts its end (by SIGTERM) as the cancel, not as a failure.
  vfs_->SetDiskFull(false);
  FakeExecutor runner;
  runner.lock_holders[LockPath(id, 1)] = 4242;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_TRUE(View(id)->job.cancel_requested);
  EXPECT_THAT(runner.stopped, ::testing::Contains(4242));
  exec::ExitStatus s;
  s.signal = 15;
  runner.statuses[StatusPath(id, 1)] = s;
  jobs->OnShimExit(runner.TokenOf(4242));
  EXPECT_EQ(View(id)->job.state, JobState::kCancelled);
  EXPECT_TRUE(runner.starts.empty()) << "a cancelled job is never run again";
  const std::vector<store::JobRecord> after = *store_->LoadJobs();
  for (const auto& rec : after) {
    EXPECT_EQ(rec.state, JobState::kCancelled);
    EXPECT_TRUE(rec.cancel_requested);
  }
}

TEST_F(DiskFullTest, ACancelKeptForAnEarlierAttemptDoesNotCancelALaterOne) {
  FakeExecutor first;
  std::string id;
  {
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
  }
  // Attempt 1's cancel was kept; the job is on attempt 2 now.
  ASSERT_TRUE(KeepCancelRequest(home(), id, 1).ok());
  auto records = *store_->LoadJobs();
  ASSERT_EQ(records.size(), 1u);
  records[0].attempt = 2;
  ASSERT_TRUE(store_->UpdateJob(records[0]).ok());
  store::AttemptRecord a2 = store_->LoadAttempts()->front();
  a2.number = 2;
  ASSERT_TRUE(store_->UpsertAttempt(a2).ok());
  FakeExecutor runner;
  runner.lock_holders[LockPath(id, 2)] = 4242;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_FALSE(View(id)->job.cancel_requested);
  EXPECT_TRUE(runner.stopped.empty());
}

TEST_F(DiskFullTest, ACapsuleThatCannotBeWrittenIsSealedLaterAndSaysSoMeanwhile) {
  FakeExecutor runner;
  std::vector<std::function<void()>> timers;
  std::vector<std::function<void()>> deferred;
  Status capsule_write = ResourceExhaustedError("write blobs/sha256/ab: No space left on device");
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [&](std::chrono::milliseconds delay, std::function<void()> task) {
      if (delay == JobManager::kStoreRetryDelay) timers.push_back(std::move(task));
    };
    o.defer = [&](std::function<void()> task) { deferred.push_back(std::move(task)); };
    o.before_capsule_write = [&] { return capsule_write; };
  };
  // Runs what the loop would run after the current task (eviction too).
  auto drain = [&] {
    while (!deferred.empty()) {
      auto due = std::move(deferred);
      deferred.clear();
      for (auto& t : due) t();
    }
  };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  drain();
  exec::ExitStatus s;
  s.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = s;
  jobs->OnShimExit(runner.TokenOf(1000));
  drain();
  ASSERT_EQ(View(id)->job.state, JobState::kSucceeded);

  // Only the capsule's write failed: the job says why it is not sealed,
  // and it is kept (not let go of) so that it will be.
  auto unsealed = View(id);
  ASSERT_TRUE(unsealed);
  EXPECT_TRUE(unsealed->job.evidence.empty());
  EXPECT_THAT(unsealed->evidence_error, HasSubstr("No space left on device"));
  EXPECT_THAT(unsealed->evidence_error, HasSubstr("tried again every 5 s"));
  EXPECT_NE(publisher_.Current()->Find(id), nullptr) << "kept in memory until sealed";
  ASSERT_FALSE(timers.empty());

  // Still failing: tried again later, not at once.
  auto fire = [&] {
    auto due = std::move(timers);
    timers.clear();
    for (auto& t : due) t();
    drain();
  };
  fire();
  EXPECT_THAT(View(id)->evidence_error, HasSubstr("No space left on device"));
  ASSERT_FALSE(timers.empty());

  // Space returns: the next try seals it.
  capsule_write = Status::Ok();
  fire();
  auto sealed = View(id);
  ASSERT_TRUE(sealed);
  EXPECT_THAT(sealed->job.evidence, ::testing::StartsWith("sha256:"));
  EXPECT_EQ(sealed->evidence_error, "");
  EXPECT_TRUE(std::filesystem::exists(home().blob(sealed->job.evidence)));
  auto stored = store_->LoadJob(id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->evidence, sealed->job.evidence);
}

TEST_F(DiskFullTest, TheLeftoversOfALostShimAreKilledOnlyOnceTheirLossIsRecorded) {
  FakeExecutor runner;
  runner.contained = true;
  std::vector<std::pair<std::chrono::milliseconds, std::function<void()>>> timers;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [&](std::chrono::milliseconds delay, std::function<void()> task) {
      timers.emplace_back(delay, std::move(task));
    };
  };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  runner.leftovers[StatusPath(id, 1)] = 1;  // the shim is gone; its job runs on
  vfs_->SetDiskFull(true);
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_TRUE(runner.sweeps.empty()) << "killed before a restarted daemon could know the attempt was interrupted";
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  bool paced = false;
  for (const auto& [delay, task] : timers) paced = paced || delay == JobManager::kStoreRetryDelay;
  EXPECT_TRUE(paced) << "the deferred kill is not retried at the store's pace";

  vfs_->SetDiskFull(false);
  runner.leftovers[StatusPath(id, 1)] = 0;
  runner.killed[StatusPath(id, 1)] = 1;  // alive until the sweep kills it
  clock_.Advance(JobManager::kStoreRetryDelay);
  auto due = std::move(timers);
  timers.clear();
  for (auto& [delay, task] : due) task();
  EXPECT_EQ(runner.sweeps.size(), 1u);
  EXPECT_TRUE(HasEvent(id, "ShimLost", "1 process of the job still ran"));
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Lost");
}

TEST_F(DiskFullTest, ACancelKillsTheLeftoversOfALostShimEvenWhenTheirLossCannotBeRecorded) {
  FakeExecutor runner;
  runner.contained = true;
  std::vector<std::function<void()>> timers;
  tweak_ = [&](JobManagerOptions& o) {
    o.after = [&](std::chrono::milliseconds, std::function<void()> task) { timers.push_back(std::move(task)); };
  };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  runner.leftovers[StatusPath(id, 1)] = 1;
  vfs_->SetDiskFull(true);
  jobs->OnShimExit(runner.TokenOf(1000));
  ASSERT_TRUE(runner.sweeps.empty());
  (void)jobs->Cancel(id);  // refused as unrecorded, but the job is stopped
  runner.leftovers[StatusPath(id, 1)] = 0;
  runner.killed[StatusPath(id, 1)] = 1;
  auto due = std::move(timers);
  timers.clear();
  for (auto& task : due) task();
  EXPECT_EQ(runner.sweeps.size(), 1u) << "a cancelled job's processes ran on";
  EXPECT_EQ(View(id)->job.state, JobState::kCancelled);
}

}  // namespace
}  // namespace tau::server
