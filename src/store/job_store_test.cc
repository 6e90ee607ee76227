#include "store/job_store.h"
#include "store/migrations.h"
#include "store/fault_vfs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace tau::store {
namespace {

JobRecord Job(const std::string& id, int64_t seq) {
  JobRecord j;
  j.id = id;
  j.seq = seq;
  j.name = "train";
  j.workspace = "default";
  j.queue = "default";
  j.spec_json = "{}";
  j.spec_sha256 = "abc";
  j.snapshot_digest = "def";
  j.created_at = 1000 + seq;
  return j;
}

class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tau-store-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path() const { return (dir_ / "tau.db").string(); }
  std::filesystem::path dir_;
};

TEST_F(JobStoreTest, MigratesAndReopens) {
  {
    auto store = JobStore::Open(Path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ(*(*store)->SchemaVersion(), static_cast<int>(Migrations().size()));
    ASSERT_TRUE((*store)->InsertJob(Job("j_a", 1)).ok());
  }
  auto again = JobStore::Open(Path());
  ASSERT_TRUE(again.ok());
  auto jobs = (*again)->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, "j_a");
}

TEST_F(JobStoreTest, SubmitRequestIdsSurviveAReopenAndAreUnique) {
  {
    auto store = *JobStore::Open(Path());
    EXPECT_FALSE(store->FindSubmitRequest("r_1")->has_value());
    ASSERT_TRUE(store->InsertSubmitRequest({"r_1", "j_a", "abc", 5}).ok());
    EXPECT_FALSE(store->InsertSubmitRequest({"r_1", "j_b", "abc", 6}).ok()) << "one job per request id";
  }
  auto store = *JobStore::Open(Path());
  auto found = store->FindSubmitRequest("r_1");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->job_id, "j_a");
  EXPECT_EQ((*found)->spec_sha256, "abc");
  EXPECT_EQ((*found)->created_at, 5);
}

TEST_F(JobStoreTest, RoundTripsEveryField) {
  auto store = *JobStore::Open(Path());
  JobRecord j = Job("j_b", 7);
  j.state = JobState::kFailed;
  j.reason = "ExitCode";
  j.message = "exit code 3";
  j.exit_code = 3;
  j.attempt = 2;
  j.cancel_requested = true;
  j.admitted_at = 5;
  j.started_at = 6;
  j.finished_at = 9;
  j.submit_command = "tau run x.yaml";
  j.depends_on = "j_aaaaaaaaaa,j_bbbbbbbbbb";
  j.held = true;
  j.priority_class = "high";
  j.preempted_by = "j_cccccccccc";
  j.restarts = 2;
  j.interruptions = 5;
  j.retry_at = 1234;
  j.retry_reason = "exit:3";
  j.resume_from = "step-9";
  j.checkpoints = "[]";
  j.reproduces = "j_dddddddddd";
  j.evidence_submit = "sha256:aa";
  j.evidence = "sha256:bb";
  j.gpu_fault = "GpuFault";
  ASSERT_TRUE(store->InsertJob(j).ok());
  auto loaded = (*store->LoadJobs())[0];
  EXPECT_EQ(loaded.state, JobState::kFailed);
  EXPECT_EQ(loaded.reason, "ExitCode");
  EXPECT_EQ(loaded.exit_code, 3);
  EXPECT_EQ(loaded.attempt, 2);
  EXPECT_TRUE(loaded.cancel_requested);
  EXPECT_EQ(loaded.finished_at, 9);
  EXPECT_EQ(loaded.submit_command, "tau run x.yaml");
  EXPECT_EQ(loaded.depends_on, "j_aaaaaaaaaa,j_bbbbbbbbbb");
  EXPECT_TRUE(loaded.held);
  EXPECT_EQ(loaded.priority_class, "high");
  EXPECT_EQ(loaded.preempted_by, "j_cccccccccc");
  EXPECT_EQ(loaded.restarts, 2);
  EXPECT_EQ(loaded.interruptions, 5);
  EXPECT_EQ(loaded.retry_at, 1234);
  EXPECT_EQ(loaded.retry_reason, "exit:3");
  EXPECT_EQ(loaded.resume_from, "step-9");
  EXPECT_EQ(loaded.checkpoints, "[]");
  EXPECT_EQ(loaded.reproduces, "j_dddddddddd");
  EXPECT_EQ(loaded.evidence_submit, "sha256:aa");
  EXPECT_EQ(loaded.evidence, "sha256:bb");
  EXPECT_EQ(loaded.gpu_fault, "GpuFault");
  EXPECT_FALSE(loaded.exit_code == std::nullopt);

  loaded.state = JobState::kSucceeded;
  loaded.exit_code = std::nullopt;
  ASSERT_TRUE(store->UpdateJob(loaded).ok());
  auto updated = (*store->LoadJobs())[0];
  EXPECT_EQ(updated.state, JobState::kSucceeded);
  EXPECT_EQ(updated.exit_code, std::nullopt);
  EXPECT_EQ(store->UpdateJob(Job("j_missing", 99)).code(), StatusCode::kNotFound);
}

TEST_F(JobStoreTest, UpdateKeepsWhatWasFixedAtSubmit) {
  auto store = *JobStore::Open(Path());
  JobRecord j = Job("j_1", 1);
  j.name = "first";
  j.spec_json = "{\"a\":1}";
  j.evidence_submit = "sha256:aa";
  ASSERT_TRUE(store->InsertJob(j).ok());
  JobRecord changed = j;
  changed.state = JobState::kRunning;
  changed.evidence = "sha256:bb";
  changed.name = "second";
  changed.spec_json = "{}";
  changed.seq = 7;
  changed.evidence_submit = "sha256:cc";
  ASSERT_TRUE(store->UpdateJob(changed).ok());
  auto loaded = (*store->LoadJobs())[0];
  EXPECT_EQ(loaded.state, JobState::kRunning);
  EXPECT_EQ(loaded.evidence, "sha256:bb");
  EXPECT_EQ(loaded.name, "first");
  EXPECT_EQ(loaded.spec_json, "{\"a\":1}");
  EXPECT_EQ(loaded.seq, 1);
  EXPECT_EQ(loaded.evidence_submit, "sha256:aa");
}

TEST_F(JobStoreTest, AttemptsUpsertAndEventsPage) {
  auto store = *JobStore::Open(Path());
  ASSERT_TRUE(store->InsertJob(Job("j_c", 1)).ok());
  AttemptRecord a{"j_c", 1, AttemptState::kRunning, "", std::nullopt, std::nullopt, 1234, 99, "0,1", 10, std::nullopt};
  ASSERT_TRUE(store->UpsertAttempt(a).ok());
  a.state = AttemptState::kSucceeded;
  a.exit_code = 0;
  a.pinned_cpus = "4,5;6";
  a.retry_reason = "oom";
  a.resumed_from = "/ckpt/step-3";
  a.peak_rss_kb = 2048;
  ASSERT_TRUE(store->UpsertAttempt(a).ok());
  auto attempts = *store->LoadAttempts();
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].state, AttemptState::kSucceeded);
  EXPECT_EQ(attempts[0].gpus, "0,1");
  EXPECT_EQ(attempts[0].pinned_cpus, "4,5;6");
  EXPECT_EQ(attempts[0].retry_reason, "oom");
  EXPECT_EQ(attempts[0].resumed_from, "/ckpt/step-3");
  EXPECT_EQ(attempts[0].peak_rss_kb, 2048);
  EXPECT_EQ(attempts[0].shim_start_ticks, 99);

  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->AppendEvent({0, "j_c", i, "E" + std::to_string(i), "", ""}).ok());
  auto first = *store->LoadEvents("j_c", 0, 2);
  ASSERT_EQ(first.size(), 2u);
  auto rest = *store->LoadEvents("j_c", first.back().id, 100);
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[0].type, "E2");

  ASSERT_TRUE(store->DeleteJob("j_c").ok());
  EXPECT_TRUE(store->LoadAttempts()->empty());
  EXPECT_TRUE(store->LoadEvents("", 0, 100)->empty());
}

TEST_F(JobStoreTest, GpusUpsertAndTheirEventsPage) {
  auto opened = JobStore::Open(Path());
  ASSERT_TRUE(opened.ok());
  auto& store_ = *opened;
  ASSERT_TRUE(store_->UpsertGpu({"GPU-a", "Healthy", "", "", 10, false}).ok());
  ASSERT_TRUE(store_->UpsertGpu({"GPU-a", "Unhealthy", "XidFatal", "XID 95", 20, true}).ok());
  auto gpus = store_->LoadGpus();
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ((*gpus)[0].state, "Unhealthy");
  EXPECT_EQ((*gpus)[0].reason, "XidFatal");
  EXPECT_TRUE((*gpus)[0].drained);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store_->AppendGpuEvent({0, i, i == 1 ? "GPU-b" : "GPU-a", "Xid", "", ""}).ok());
  auto events = store_->LoadGpuEvents("GPU-a", 10);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].at, 0) << "oldest first";
  EXPECT_EQ(store_->LoadGpuEvents("", 2)->size(), 2u);
}

TEST_F(JobStoreTest, UncommittedTransactionsRollBack) {
  auto store = *JobStore::Open(Path());
  {
    auto txn = store->Begin();
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(store->InsertJob(Job("j_d", 1)).ok());
  }
  EXPECT_TRUE(store->LoadJobs()->empty());
  {
    auto txn = store->Begin();
    ASSERT_TRUE(store->InsertJob(Job("j_e", 1)).ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(store->LoadJobs()->size(), 1u);
}

TEST_F(JobStoreTest, DuplicateIdsAreRefused) {
  auto store = *JobStore::Open(Path());
  ASSERT_TRUE(store->InsertJob(Job("j_f", 1)).ok());
  EXPECT_EQ(store->InsertJob(Job("j_f", 2)).code(), StatusCode::kAlreadyExists);
}

TEST_F(JobStoreTest, NewerSchemaIsRefused) {
  {
    auto store = *JobStore::Open(Path());
    ASSERT_TRUE(store->db()->Exec("PRAGMA user_version = 99").ok());
  }
  auto again = JobStore::Open(Path());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tau::store

namespace tau::store {
namespace {

TEST_F(JobStoreTest, AFullDiskFailsTheCommitWithResourceExhaustedAndKeepsTheOldState) {
  auto vfs = FaultVfs::Register("tau-test-faults");
  ASSERT_TRUE(vfs.ok()) << vfs.status().ToString();
  auto store = JobStore::Open(Path(), (*vfs)->name());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<Status> seen;
  (*store)->db()->AddWriteObserver([&](const Status& st) { seen.push_back(st); });
  {
    auto txn = (*store)->Begin();
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE((*store)->InsertJob(Job("j_1", 1)).ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(seen.back().ok());

  (*vfs)->SetDiskFull(true);
  {
    auto txn = (*store)->Begin();
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE((*store)->InsertJob(Job("j_2", 2)).ok());
    Status st = txn->Commit();
    EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  }
  EXPECT_EQ(seen.back().code(), StatusCode::kResourceExhausted);
  // Outside a transaction too.
  EXPECT_EQ((*store)->UpdateJob(Job("j_1", 1)).code(), StatusCode::kResourceExhausted);

  (*vfs)->SetDiskFull(false);
  {
    auto txn = (*store)->Begin();
    ASSERT_TRUE(txn.ok()) << txn.status().ToString();
    ASSERT_TRUE((*store)->InsertJob(Job("j_3", 3)).ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_TRUE(seen.back().ok());
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  std::vector<std::string> ids;
  for (const auto& j : *jobs) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"j_1", "j_3"}));
}

}  // namespace
}  // namespace tau::store
