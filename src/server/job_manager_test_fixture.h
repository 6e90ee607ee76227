#pragma once

// The JobManager against a fake executor and a fake clock, shared by the
// job manager's test files.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "evidence/snapshot.h"
#include "sched/admission_policy.h"
#include "server/execution/fake_executor.h"
#include "server/job_manager.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::server {

namespace fs = std::filesystem;

constexpr char kJob[] = "name: a\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n";

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tau-jm-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "code");
    std::ofstream(root_ / "code" / "run.sh") << "echo hi\n";
    auto snap = evidence::PackSnapshot(root_ / "code", {});
    ASSERT_TRUE(snap.ok());
    digest_ = snap->digest;
    fs::create_directories(home().blob(digest_).parent_path());
    std::ofstream(home().blob(digest_), std::ios::binary) << snap->blob;
    store_ = *store::JobStore::Open((root_ / "home" / "taugrid.db").string());
  }
  void TearDown() override { fs::remove_all(root_); }

  TauHome home() const { return TauHome(root_ / "home"); }
  // 2 CPUs and 4 GiB under the default queue.
  static JobManagerOptions Options() {
    JobManagerOptions options;
    options.capacity = {2000, int64_t{4} << 30, 0};
    options.kueue = DefaultKueueConfig(options.capacity);
    return options;
  }
  std::unique_ptr<JobManager> Manager(FakeExecutor* runner, bool preemption = false) {
    runner->home = home();
    JobManagerOptions options = Options();
    if (preemption) {
      options.kueue.cluster_queues.at(0).preemption.within_cluster_queue = "LowerPriority";
      options.kueue.priority_classes.push_back({"high", 1000, ""});
    }
    options.jitter = [] { return 0.0; };  // backoffs exactly as computed
    if (tweak_) tweak_(options);
    return std::make_unique<JobManager>(home(), store_.get(), runner, &policy_, &clock_, options, &publisher_);
  }
  SubmitRequest Request(const std::string& body) {
    spec::Diagnostics diags;
    spec::LoadOptions o;
    o.check_files = false;
    auto loaded = spec::LoadJobSpecText("schema_version: 1\n" + body, "t.yaml", "/", o, &diags);
    EXPECT_TRUE(loaded.ok()) << diags.Format();
    return {spec::JobSpecToJson(loaded->spec), digest_, "test", {}};
  }
  std::shared_ptr<const JobView> View(const std::string& id) { return publisher_.Current()->Resolve(id); }
  std::string StatusPath(const std::string& id, int n) { return home().status_file(id, n).string(); }
  std::string LockPath(const std::string& id, int n) { return home().attempt_lock(id, n).string(); }
  // Whether the job has an event of `type` whose message holds `text`.
  bool HasEvent(const std::string& id, const std::string& type, const std::string& text = "") {
    auto events = store_->LoadEvents(id, 0, 1000);
    if (!events.ok()) return false;
    for (const auto& e : *events) {
      if (e.type == type && e.message.find(text) != std::string::npos) return true;
    }
    return false;
  }

  // Changes the options of the managers made from now on.
  std::function<void(JobManagerOptions&)> tweak_;
  fs::path root_;
  std::string digest_;
  std::unique_ptr<store::JobStore> store_;
  sched::FifoPolicy policy_;
  FakeClock clock_;
  StatePublisher publisher_;
};

}  // namespace tau::server
