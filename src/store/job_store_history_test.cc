#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/job_store.h"

namespace tau::store {
namespace {

JobRecord Job(int64_t seq, const std::string& name, JobState state = JobState::kSucceeded) {
  JobRecord j;
  j.id = "j_" + std::to_string(seq);
  j.seq = seq;
  j.name = name;
  j.workspace = seq % 2 ? "odd" : "even";
  j.queue = "default";
  j.state = state;
  j.spec_json = R"({"experiment":{"project":"p)" + std::to_string(seq % 3) + R"(","tags":{"lr":")" +
                std::to_string(seq % 4) + R"("}}})";
  j.spec_sha256 = "abc";
  j.snapshot_digest = "def";
  j.created_at = 1000 + seq;
  if (IsTerminal(state)) j.finished_at = 5000 + seq;
  j.evidence = "sha256:sealed";
  return j;
}

class JobStoreHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tau-store-history-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    store_ = std::move(*JobStore::Open((dir_ / "tau.db").string()));
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::vector<int64_t> Seqs(const std::vector<JobRecord>& jobs) {
    std::vector<int64_t> out;
    for (const auto& j : jobs) out.push_back(j.seq);
    return out;
  }
  std::filesystem::path dir_;
  std::unique_ptr<JobStore> store_;
};

TEST_F(JobStoreHistoryTest, ListsNewestFirstInPagesWithFilters) {
  for (int64_t s = 1; s <= 10; ++s) ASSERT_TRUE(store_->InsertJob(Job(s, s <= 5 ? "a" : "b")).ok());
  auto page = store_->ListJobs({}, 0, 4);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(Seqs(*page), (std::vector<int64_t>{10, 9, 8, 7}));
  page = store_->ListJobs({}, 7, 4);  // the next page starts after the last seq seen
  EXPECT_EQ(Seqs(*page), (std::vector<int64_t>{6, 5, 4, 3}));
  page = store_->ListJobs({}, 3, 4);
  EXPECT_EQ(Seqs(*page), (std::vector<int64_t>{2, 1}));

  JobFilter by_workspace;
  by_workspace.workspace = "odd";
  EXPECT_EQ(Seqs(*store_->ListJobs(by_workspace, 0, 100)), (std::vector<int64_t>{9, 7, 5, 3, 1}));
  JobFilter by_name;
  by_name.name = "a";
  EXPECT_EQ(Seqs(*store_->ListJobs(by_name, 4, 100)), (std::vector<int64_t>{3, 2, 1}));
  JobFilter by_project;
  by_project.project = "p0";
  EXPECT_EQ(Seqs(*store_->ListJobs(by_project, 0, 100)), (std::vector<int64_t>{9, 6, 3}));
  JobFilter by_tag;
  by_tag.tags = {{"lr", "1"}};
  EXPECT_EQ(Seqs(*store_->ListJobs(by_tag, 0, 100)), (std::vector<int64_t>{9, 5, 1}));
  by_tag.tags.push_back({"lr", "2"});  // every tag must match
  EXPECT_TRUE(store_->ListJobs(by_tag, 0, 100)->empty());
}

TEST_F(JobStoreHistoryTest, ListFiltersByState) {
  ASSERT_TRUE(store_->InsertJob(Job(1, "a", JobState::kFailed)).ok());
  ASSERT_TRUE(store_->InsertJob(Job(2, "a", JobState::kRunning)).ok());
  ASSERT_TRUE(store_->InsertJob(Job(3, "a", JobState::kFailed)).ok());
  JobFilter f;
  f.state = JobState::kFailed;
  EXPECT_EQ(Seqs(*store_->ListJobs(f, 0, 100)), (std::vector<int64_t>{3, 1}));
}

TEST_F(JobStoreHistoryTest, ResolvesAnIdElseTheNewestJobOfAName) {
  ASSERT_TRUE(store_->InsertJob(Job(1, "train")).ok());
  ASSERT_TRUE(store_->InsertJob(Job(2, "train", JobState::kRunning)).ok());
  ASSERT_TRUE(store_->InsertJob(Job(3, "other")).ok());
  EXPECT_EQ(*store_->ResolveJobId("train"), "j_2");
  EXPECT_EQ(*store_->ResolveJobId("j_1"), "j_1");
  EXPECT_EQ(*store_->ResolveJobId("nope"), "");
  auto job = store_->LoadJob("j_3");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->name, "other");
  EXPECT_FALSE(store_->LoadJob("j_9")->has_value());
  EXPECT_TRUE(*store_->JobExists("j_3"));
  EXPECT_FALSE(*store_->JobExists("other")) << "names are not ids";
}

TEST_F(JobStoreHistoryTest, LoadsOnlyUnfinishedOrUnsealedJobsForRecovery) {
  ASSERT_TRUE(store_->InsertJob(Job(1, "done")).ok());
  ASSERT_TRUE(store_->InsertJob(Job(2, "running", JobState::kRunning)).ok());
  JobRecord unsealed = Job(3, "unsealed");
  unsealed.evidence.clear();
  unsealed.evidence_submit = "sha256:submit";
  ASSERT_TRUE(store_->InsertJob(unsealed).ok());
  JobRecord without_evidence = Job(4, "old");  // from before evidence was kept: never sealed
  without_evidence.evidence.clear();
  ASSERT_TRUE(store_->InsertJob(without_evidence).ok());
  EXPECT_EQ(Seqs(*store_->LoadUnfinishedJobs()), (std::vector<int64_t>{2, 3}));
}

TEST_F(JobStoreHistoryTest, LoadsTheAttemptsOfTheJobsAsked) {
  ASSERT_TRUE(store_->InsertJob(Job(1, "a")).ok());
  ASSERT_TRUE(store_->InsertJob(Job(2, "b")).ok());
  for (const auto& [id, n] : std::vector<std::pair<std::string, int64_t>>{{"j_1", 1}, {"j_2", 2}, {"j_2", 1}}) {
    AttemptRecord a;
    a.job_id = id;
    a.number = n;
    ASSERT_TRUE(store_->UpsertAttempt(a).ok());
  }
  auto attempts = store_->LoadAttemptsOf({"j_2"});
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].number, 1);
  EXPECT_EQ((*attempts)[1].number, 2);
}

TEST_F(JobStoreHistoryTest, PrunesByCountAndByAgeOldestEndFirst) {
  // Ended at 5001..5006; seq 7 still runs and is never pruned.
  for (int64_t s = 1; s <= 6; ++s) ASSERT_TRUE(store_->InsertJob(Job(s, "a")).ok());
  ASSERT_TRUE(store_->InsertJob(Job(7, "a", JobState::kRunning)).ok());
  using Ids = std::vector<std::string>;
  EXPECT_EQ(*store_->EndedJobsToPrune(std::nullopt, 4, 100), (Ids{"j_1", "j_2"}));
  EXPECT_EQ(*store_->EndedJobsToPrune(5003, std::nullopt, 100), (Ids{"j_1", "j_2"}));
  EXPECT_EQ(*store_->EndedJobsToPrune(5002, 3, 100), (Ids{"j_1", "j_2", "j_3"}));
  EXPECT_EQ(*store_->EndedJobsToPrune(std::nullopt, 0, 2), (Ids{"j_1", "j_2"}));  // the limit
  EXPECT_TRUE(store_->EndedJobsToPrune(std::nullopt, std::nullopt, 100)->empty());
  EXPECT_TRUE(store_->EndedJobsToPrune(std::nullopt, 6, 100)->empty());
}

TEST_F(JobStoreHistoryTest, CountsEndedJobsByStateAndQueue) {
  ASSERT_TRUE(store_->InsertJob(Job(1, "a")).ok());
  ASSERT_TRUE(store_->InsertJob(Job(3, "a")).ok());
  ASSERT_TRUE(store_->InsertJob(Job(5, "a", JobState::kFailed)).ok());
  ASSERT_TRUE(store_->InsertJob(Job(7, "a", JobState::kQueued)).ok());
  auto counts = store_->CountEndedJobs();
  ASSERT_TRUE(counts.ok());
  int64_t succeeded = 0, failed = 0, total = 0;
  for (const auto& c : *counts) {
    total += c.count;
    if (c.state == JobState::kSucceeded) succeeded += c.count;
    if (c.state == JobState::kFailed) failed += c.count;
  }
  EXPECT_EQ(succeeded, 2);
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(total, 3);
}

TEST_F(JobStoreHistoryTest, SubmitRequestIdsGoWithTheirJobOrWhenOld) {
  ASSERT_TRUE(store_->InsertSubmitRequest({"r_old", "j_1", "abc", 1000}).ok());
  ASSERT_TRUE(store_->InsertSubmitRequest({"r_new", "j_1", "abc", 5000}).ok());
  ASSERT_TRUE(store_->InsertSubmitRequest({"r_other", "j_2", "abc", 5000}).ok());

  auto removed = store_->DeleteSubmitRequestsBefore(5000);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 1);
  EXPECT_FALSE(store_->FindSubmitRequest("r_old")->has_value());
  ASSERT_TRUE(store_->FindSubmitRequest("r_new")->has_value());
  EXPECT_EQ((*store_->FindSubmitRequest("r_new"))->job_id, "j_1");

  ASSERT_TRUE(store_->DeleteSubmitRequestsOf("j_1").ok());
  EXPECT_FALSE(store_->FindSubmitRequest("r_new")->has_value());
  EXPECT_TRUE(store_->FindSubmitRequest("r_other")->has_value()) << "another job's id stays";
}

TEST_F(JobStoreHistoryTest, SubmitRequestIdsAreRemovedThroughAnIndex) {
  for (const char* sql : {"EXPLAIN QUERY PLAN DELETE FROM submit_requests WHERE job_id = 'j_1'",
                          "EXPLAIN QUERY PLAN DELETE FROM submit_requests WHERE created_at < 5"}) {
    auto st = store_->db()->Prepare(sql);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    std::string plan;
    while (*st->Step()) plan += st->Text(3) + "\n";
    EXPECT_NE(plan.find("USING INDEX"), std::string::npos) << sql << ":\n" << plan;
  }
}

}  // namespace
}  // namespace tau::store
