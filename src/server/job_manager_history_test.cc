// Ended jobs leave the loop's memory and are read back from the database:
// every command that names a job still finds them, and history.keep and
// prune remove the oldest with their files.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/job_manager.h"
#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::HasSubstr;

class JobHistoryTest : public JobManagerTest {
 protected:
  // Submits a job named `name` and ends it with `exit_code`.
  std::string EndedJob(JobManager& jobs, FakeExecutor& runner, const std::string& name, int exit_code = 0) {
    auto job = jobs.Submit(Request("name: " + name + "\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 100m}\n"));
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    std::string id = (*job)->job.id;
    exec::ExitStatus st;
    st.exit_code = exit_code;
    runner.statuses[StatusPath(id, 1)] = st;
    jobs.OnShimExit(runner.TokenOf(runner.next_pid - 1));
    EXPECT_TRUE(store::IsTerminal(View(id)->job.state));
    return id;
  }
  int64_t StoredJobs() { return static_cast<int64_t>(store_->LoadJobs()->size()); }
};

TEST_F(JobHistoryTest, AnEndedJobLeavesMemoryAndIsStillFoundByIdAndByName) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string first = EndedJob(*jobs, runner, "train");
  std::string second = EndedJob(*jobs, runner, "train", 3);
  EXPECT_EQ(jobs->HeldJobs(), 2u);
  jobs->EvictEnded();
  EXPECT_EQ(jobs->HeldJobs(), 0u);
  EXPECT_TRUE(publisher_.Current()->jobs.empty()) << "the published view holds unfinished work only";

  auto view = View(first);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->job.state, JobState::kSucceeded);
  ASSERT_EQ(view->attempts.size(), 1u);
  EXPECT_EQ(view->cpus_milli, 100);
  ASSERT_NE(View("train"), nullptr);
  EXPECT_EQ(View("train")->job.id, second) << "a name resolves to the newest job of that name";
  EXPECT_EQ(View("train")->job.exit_code, 3);

  // A newer running job of the same name wins over the ended ones.
  std::string running = (*jobs->Submit(Request("name: train\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 100m}\n")))->job.id;
  EXPECT_EQ(View("train")->job.id, running);
  EXPECT_EQ(jobs->HeldJobs(), 1u);
}

TEST_F(JobHistoryTest, CommandsActOnEndedJobsTheLoopLetGo) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string a = EndedJob(*jobs, runner, "a");
  std::string b = EndedJob(*jobs, runner, "b", 1);
  std::string c = EndedJob(*jobs, runner, "c");
  jobs->EvictEnded();
  ASSERT_EQ(jobs->HeldJobs(), 0u);

  auto cancel = jobs->Cancel("a");
  ASSERT_FALSE(cancel.ok());
  EXPECT_THAT(cancel.status().message(), HasSubstr("has already ended"));
  auto source = jobs->EvidenceSourceOf(a);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto evidence = jobs->AssembleEvidence(std::move(*source));
  ASSERT_TRUE(evidence.ok()) << evidence.status().ToString();
  EXPECT_THAT(*evidence, HasSubstr(a));
  auto why = jobs->WhyJson("a");
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(*why, HasSubstr("Succeeded"));

  auto resumed = jobs->Resume("b", "");
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(View(b)->job.state, JobState::kRunning);
  EXPECT_EQ(View(b)->job.attempt, 2);

  auto copy = jobs->Reproduce("c", {}, "tau reproduce c");
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_EQ((*copy)->job.reproduces, c);

  EXPECT_TRUE(fs::exists(home().attempt_lock(a, 1).parent_path())) << "its shims' locks are kept in the state folder";
  ASSERT_TRUE(jobs->Remove("a").ok());
  EXPECT_EQ(View(a), nullptr);
  EXPECT_FALSE(fs::exists(home().job_dir(a)));
  EXPECT_FALSE(fs::exists(home().shim_dir(a)));
  jobs->EvictEnded();
  EXPECT_EQ(jobs->HeldJobs(), 2u) << "the resumed job and the reproduction run";
}

TEST_F(JobHistoryTest, DependenciesThatLeftMemoryStillDecide) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  EndedJob(*jobs, runner, "prep");
  EndedJob(*jobs, runner, "broken", 2);
  jobs->EvictEnded();
  std::string ok = (*jobs->Submit(Request("name: t\nrun: {entrypoint: x}\ncompute: {cpus: 100m}\ndepends_on: [prep]\n")))->job.id;
  EXPECT_EQ(View(ok)->job.state, JobState::kRunning);
  std::string bad = (*jobs->Submit(Request("name: u\nrun: {entrypoint: x}\ncompute: {cpus: 100m}\ndepends_on: [broken]\n")))->job.id;
  EXPECT_EQ(View(bad)->job.state, JobState::kFailed);
  EXPECT_EQ(View(bad)->job.reason, "DependencyFailed");
  EXPECT_THAT(View(bad)->job.message, HasSubstr("(broken) ended Failed"));
}

TEST_F(JobHistoryTest, HistoryKeepRemovesTheOldestEndedJobsWithTheirFiles) {
  tweak_ = [](JobManagerOptions& o) { o.history_keep = 2; };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(EndedJob(*jobs, runner, "j" + std::to_string(i)));
    clock_.Advance(std::chrono::seconds(1));
  }
  std::string running = (*jobs->Submit(Request(kJob)))->job.id;
  std::string evidence = View(ids[0])->job.evidence;
  ASSERT_FALSE(evidence.empty());
  jobs->EvictEnded();
  EXPECT_EQ(StoredJobs(), 3) << "the 2 most recently ended, and the running one";
  EXPECT_EQ(View(ids[0]), nullptr);
  EXPECT_EQ(View(ids[1]), nullptr);
  EXPECT_NE(View(ids[2]), nullptr);
  EXPECT_NE(View(ids[3]), nullptr);
  EXPECT_EQ(View(running)->job.state, JobState::kRunning);
  EXPECT_FALSE(fs::exists(home().job_dir(ids[0])));
  EXPECT_FALSE(fs::exists(home().blob(evidence))) << "the job's evidence capsule goes with it";
  EXPECT_TRUE(fs::exists(home().job_dir(ids[3])));
  EXPECT_TRUE(fs::exists(home().blob(digest_))) << "code snapshots may be shared: they stay";
}

TEST_F(JobHistoryTest, PruneRemovesByCountAndByAge) {
  tweak_ = [](JobManagerOptions& o) { o.history_keep.reset(); };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(EndedJob(*jobs, runner, "j" + std::to_string(i)));
    clock_.Advance(std::chrono::minutes(10));
  }
  jobs->EvictEnded();
  EXPECT_EQ(StoredJobs(), 5) << "history.keep \"all\" keeps every ended job";
  auto removed = jobs->Prune(std::nullopt, 3);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, (std::vector<std::string>{ids[0], ids[1]}));
  // ids[2] ended 30 min ago, ids[3] 20, ids[4] 10.
  removed = jobs->Prune(std::chrono::minutes(25), std::nullopt);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, (std::vector<std::string>{ids[2]}));
  EXPECT_EQ(StoredJobs(), 2);
  EXPECT_FALSE(jobs->Prune(std::nullopt, std::nullopt).ok());
  EXPECT_FALSE(jobs->Prune(std::nullopt, -1).ok());
}

TEST_F(JobHistoryTest, ARestartHoldsOnlyUnfinishedJobsKeepsNumberingAndRemovesOrphanFolders) {
  std::string ended;
  std::string running;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    ended = EndedJob(*jobs, first, "done");
    running = (*jobs->Submit(Request(kJob)))->job.id;
  }
  // A folder whose row a prune deleted before the daemon stopped.
  fs::create_directories(home().job_dir("j_orphan") / "code");
  fs::create_directories(home().shim_dir("j_orphan") / "1");
  FakeExecutor runner;
  runner.lock_holders[LockPath(running, 1)] = 4242;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(jobs->HeldJobs(), 1u);
  EXPECT_FALSE(fs::exists(home().job_dir("j_orphan")));
  EXPECT_FALSE(fs::exists(home().shim_dir("j_orphan")));
  EXPECT_TRUE(fs::exists(home().job_dir(ended)));
  EXPECT_TRUE(fs::exists(home().job_dir(running)));
  EXPECT_TRUE(fs::exists(home().shim_dir(running)));
  EXPECT_EQ(View(ended)->job.state, JobState::kSucceeded);
  const int64_t before = View(running)->job.seq;
  std::string next = (*jobs->Submit(Request(kJob)))->job.id;
  EXPECT_GT(View(next)->job.seq, before);
}

TEST_F(JobHistoryTest, SubmitRequestIdsGoWithPrunedJobsAndAfterAWeek) {
  tweak_ = [](JobManagerOptions& o) { o.history_keep.reset(); };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto submit_with_id = [&](const std::string& request_id) {
    SubmitRequest req = Request("name: s\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 100m}\n");
    req.request_id = request_id;
    auto job = jobs->Submit(req);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    std::string id = (*job)->job.id;
    exec::ExitStatus st;
    st.exit_code = 0;
    runner.statuses[StatusPath(id, 1)] = st;
    jobs->OnShimExit(runner.TokenOf(runner.next_pid - 1));
    return id;
  };
  std::string pruned = submit_with_id("r_pruned");
  std::string removed = submit_with_id("r_removed");
  clock_.Advance(std::chrono::hours(1));
  jobs->EvictEnded();
  ASSERT_TRUE(jobs->Remove(removed).ok());
  EXPECT_TRUE(store_->FindSubmitRequest("r_removed")->has_value()) << "tau rm keeps the id for a week";

  auto gone = jobs->Prune(std::nullopt, 0);
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(*gone, (std::vector<std::string>{pruned}));
  EXPECT_FALSE(store_->FindSubmitRequest("r_pruned")->has_value()) << "prune removes the job's ids with it";
  EXPECT_TRUE(store_->FindSubmitRequest("r_removed")->has_value());

  // A week later, the next job that ends takes the old id with it.
  clock_.Advance(JobManager::kSubmitRequestKeep);
  std::string fresh = submit_with_id("r_fresh");
  jobs->EvictEnded();
  EXPECT_FALSE(store_->FindSubmitRequest("r_removed")->has_value()) << "an id older than a week is removed";
  EXPECT_TRUE(store_->FindSubmitRequest("r_fresh")->has_value());
}

}  // namespace
}  // namespace tau::server
