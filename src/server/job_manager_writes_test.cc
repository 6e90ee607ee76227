// What a job's life writes to the store, and when: the submit part of the
// evidence is written with the job's folder, off the loop, and the records
// of what has already happened (an attempt's start, a sealed capsule's
// digest) go with the job's next write or a shared flush.

#include <fstream>
#include <sstream>

#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::HasSubstr;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

class JobWritesTest : public JobManagerTest {
 protected:
  // Deferred writes on, the flush timer captured; counts every commit.
  std::unique_ptr<JobManager> DeferringManager(FakeExecutor* runner) {
    tweak_ = [this](JobManagerOptions& o) {
      o.after = [this](std::chrono::milliseconds delay, std::function<void()> task) {
        timers_.emplace_back(delay, std::move(task));
      };
      o.deferred_write_delay = std::chrono::milliseconds(20);
    };
    observer_ = store_->db()->AddWriteObserver([this](const Status& st) {
      if (st.ok()) ++commits_;
    });
    return Manager(runner);
  }
  void TearDown() override {
    if (observer_) store_->db()->RemoveWriteObserver(observer_);
    JobManagerTest::TearDown();
  }
  // Runs the timers armed so far (the deferred flush among them).
  void RunTimers() {
    auto due = std::move(timers_);
    timers_.clear();
    for (auto& [delay, task] : due) task();
  }
  void Succeed(JobManager& jobs, FakeExecutor& runner, const std::string& id, int64_t pid) {
    exec::ExitStatus ok;
    ok.exit_code = 0;
    runner.statuses[StatusPath(id, 1)] = ok;
    jobs.OnShimExit(runner.TokenOf(pid));
  }
  std::vector<std::string> EventTypes(const std::string& id) {
    std::vector<std::string> types;
    auto events = store_->LoadEvents(id, 0, 100);
    EXPECT_TRUE(events.ok());
    if (events.ok()) {
      for (const auto& e : *events) types.push_back(e.type);
    }
    return types;
  }

  std::vector<std::pair<std::chrono::milliseconds, std::function<void()>>> timers_;
  int observer_ = 0;
  int commits_ = 0;
};

TEST_F(JobWritesTest, TheSubmitEvidenceIsWrittenWithTheFolderOffTheLoop) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  SubmitRequest request = Request(kJob);
  auto prepared = jobs->PrepareSubmit(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  ASSERT_FALSE(prepared->evidence_submit.empty());
  const std::string text = ReadAll(home().blob(prepared->evidence_submit));
  EXPECT_THAT(text, HasSubstr("\"id\":\"" + prepared->id + "\""));
  EXPECT_THAT(text, HasSubstr("\"spec_sha256\":\"" + prepared->spec_sha256 + "\""));

  auto job = jobs->Submit(request, *prepared);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto stored = *store_->LoadJob(prepared->id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->evidence_submit, prepared->evidence_submit);
  EXPECT_EQ(stored->created_at, prepared->created_at);
  EXPECT_EQ(stored->spec_json, prepared->spec_json);
}

TEST_F(JobWritesTest, ARefusedSubmitLeavesNeitherFolderNorEvidence) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  SubmitRequest request = Request("name: big\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 64}\n");
  auto prepared = jobs->PrepareSubmit(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  ASSERT_TRUE(fs::exists(home().blob(prepared->evidence_submit)));
  auto job = jobs->Submit(request, *prepared);
  ASSERT_FALSE(job.ok());
  EXPECT_FALSE(fs::exists(home().blob(prepared->evidence_submit)));
  EXPECT_FALSE(fs::exists(home().job_dir(prepared->id)));
}

TEST_F(JobWritesTest, AShortJobCommitsThreeTimesAndSharesAFlush) {
  FakeExecutor runner;
  auto jobs = DeferringManager(&runner);
  std::vector<std::string> ids;
  for (int64_t pid : {1000, 1001}) {
    const int before = commits_;
    ids.push_back((*jobs->Submit(Request(kJob)))->job.id);
    EXPECT_EQ(commits_ - before, 2) << "the submit and \"attempt starting\", before the shim exists";
    Succeed(*jobs, runner, ids.back(), pid);
    EXPECT_EQ(commits_ - before, 3) << "the end carries the start";
    EXPECT_EQ(View(ids.back())->job.state, JobState::kSucceeded);
  }
  // The capsules are sealed; their digests wait for the flush, one for both.
  for (const auto& id : ids) EXPECT_TRUE((*store_->LoadJob(id))->evidence.empty());
  const int before = commits_;
  RunTimers();
  EXPECT_EQ(commits_ - before, 1);
  for (const auto& id : ids) {
    auto stored = *store_->LoadJob(id);
    EXPECT_FALSE(stored->evidence.empty());
    EXPECT_EQ(EventTypes(id), (std::vector<std::string>{"Submitted", "Admitted", "Started", "Succeeded"}));
    auto attempts = *store_->LoadAttemptsOf({id});
    ASSERT_EQ(attempts.size(), 1u);
    EXPECT_EQ(attempts[0].shim_pid, id == ids[0] ? 1000 : 1001);
    EXPECT_TRUE(attempts[0].started_at.has_value());
  }
}

TEST_F(JobWritesTest, ARunningJobsStartIsWrittenByTheFlush) {
  FakeExecutor runner;
  auto jobs = DeferringManager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_EQ((*store_->LoadJob(id))->state, JobState::kAdmitted);
  ASSERT_EQ(timers_.size(), 1u);
  EXPECT_EQ(timers_[0].first, std::chrono::milliseconds(20));
  RunTimers();
  EXPECT_EQ((*store_->LoadJob(id))->state, JobState::kRunning);
  EXPECT_EQ((*store_->LoadAttemptsOf({id}))[0].state, store::AttemptState::kRunning);
  EXPECT_EQ(EventTypes(id), (std::vector<std::string>{"Submitted", "Admitted", "Started"}));
}

TEST_F(JobWritesTest, ADaemonKilledBeforeItWroteTheStartAdoptsTheShimAndStartsNothing) {
  std::string id;
  {
    FakeExecutor first;
    auto jobs = DeferringManager(&first);
    id = (*jobs->Submit(Request(kJob)))->job.id;
    ASSERT_EQ(first.starts.size(), 1u);
    // Gone without a flush, as after kill -9: the store says "starting".
  }
  ASSERT_EQ((*store_->LoadAttemptsOf({id}))[0].state, store::AttemptState::kStarting);
  FakeExecutor runner;
  runner.lock_holders[LockPath(id, 1)] = 1000;  // the shim still runs
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_TRUE(runner.starts.empty()) << "started twice";
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_EQ((*store_->LoadAttemptsOf({id}))[0].state, store::AttemptState::kRunning);
  Succeed(*jobs, runner, id, 1000);
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
  EXPECT_TRUE(runner.starts.empty());
}

TEST_F(JobWritesTest, AJobIsLetGoOnlyOnceItsDeferredChangesAreWritten) {
  FakeExecutor runner;
  auto jobs = DeferringManager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  Succeed(*jobs, runner, id, 1000);
  jobs->EvictEnded();
  EXPECT_EQ(jobs->HeldJobs(), 1u) << "let go with its capsule's digest unwritten";
  RunTimers();
  jobs->EvictEnded();
  EXPECT_EQ(jobs->HeldJobs(), 0u);
  EXPECT_FALSE((*store_->LoadJob(id))->evidence.empty());
}

TEST_F(JobWritesTest, ExpiredSubmitRequestIdsAreSweptAtMostOnceAMinute) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto end_a_job = [&] {
    std::string id = (*jobs->Submit(Request(kJob)))->job.id;
    Succeed(*jobs, runner, id, runner.next_pid - 1);
    jobs->EvictEnded();  // sweeps, unless it did less than a minute ago
  };
  end_a_job();
  const int64_t old = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch()).count() -
                      std::chrono::duration_cast<std::chrono::milliseconds>(JobManager::kSubmitRequestKeep).count() - 1;
  ASSERT_TRUE(store_->InsertSubmitRequest({"r_expired", "j_gone", "abc", old}).ok());
  clock_.Advance(std::chrono::seconds(59));
  end_a_job();
  EXPECT_TRUE(store_->FindSubmitRequest("r_expired")->has_value()) << "swept twice within a minute";
  clock_.Advance(std::chrono::seconds(1));
  end_a_job();
  EXPECT_FALSE(store_->FindSubmitRequest("r_expired")->has_value());
}

}  // namespace
}  // namespace tau::server
