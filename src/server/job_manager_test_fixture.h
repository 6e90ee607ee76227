#pragma once

// The JobManager against a fake runner and a fake clock, shared by the
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
#include "server/job_manager.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::server {

namespace fs = std::filesystem;

class FakeRunner final : public AttemptRunner {
 public:
  Result<exec::ShimProcess> Start(const AttemptStart& start) override {
    starts.push_back(start);
    if (fail_start) return PermissionDeniedError("cannot start tau-shim");
    return exec::ShimProcess{next_pid++, 1};
  }
  Status Stop(const exec::ShimProcess& shim) override {
    stopped.push_back(shim.pid);
    return Status::Ok();
  }
  Status Kill(const exec::ShimProcess& shim) override {
    killed_shims.push_back(shim.pid);
    return Status::Ok();
  }
  Status Watch(uint64_t token, int64_t pid) override {
    watched[token] = pid;
    return Status::Ok();
  }
  std::optional<int64_t> LockHolder(const std::string& lock_path) override {
    auto it = lock_holders.find(lock_path);
    if (it == lock_holders.end()) return std::nullopt;
    return it->second;
  }
  Result<exec::ExitStatus> ReadStatus(const std::string& path) override {
    if (auto bad = status_errors.find(path); bad != status_errors.end()) return bad->second;
    auto it = statuses.find(path);
    if (it == statuses.end()) return NotFoundError("no status");
    return it->second;
  }
  bool StatusWrittenByShim(const std::string& lock_path) override { return unrecorded_status.count(lock_path) == 0; }
  RankRemains Sweep(const RankSweep& sweep) override {
    sweeps.push_back(sweep);
    RankRemains r;
    r.alive = leftovers[sweep.status_path];
    r.killed = std::max(r.alive, killed[sweep.status_path]);
    if (r.alive > 0) r.why_alive = "still dying";
    r.may_have_run = never_ran.count(sweep.status_path) == 0;
    r.rebooted = rebooted;
    r.contained = contained;
    return r;
  }
  uint64_t TokenOf(int64_t pid) const {
    for (const auto& [token, p] : watched) {
      if (p == pid) return token;
    }
    return 0;
  }

  std::vector<AttemptStart> starts;
  std::vector<int64_t> stopped;
  std::vector<int64_t> killed_shims;
  std::map<uint64_t, int64_t> watched;
  std::map<std::string, int64_t> lock_holders;
  std::map<std::string, exec::ExitStatus> statuses;
  std::map<std::string, Status> status_errors;  // what reading a status file that is not one says
  // Lock paths whose shim did not record writing the status (by default
  // every shim that left a status did).
  std::set<std::string> unrecorded_status;
  bool fail_start = false;
  int64_t next_pid = 1000;
  // What Sweep finds of a rank whose shim is gone, by status path:
  // processes still alive after it (the test lowers the count as they die),
  // processes it killed that were gone before it returned, ranks whose shim
  // never started the job, whether the machine restarted, and whether a
  // cgroup proved nothing of the rank left (false: no cgroup held it).
  std::vector<RankSweep> sweeps;
  std::map<std::string, int64_t> leftovers;
  std::map<std::string, int64_t> killed;
  std::set<std::string> never_ran;
  bool rebooted = false;
  bool contained = false;
};

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
  std::unique_ptr<JobManager> Manager(FakeRunner* runner, bool preemption = false) {
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
