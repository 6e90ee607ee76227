#pragma once

// An executor for tests: nothing runs. Starts get handles 1000, 1001, ...;
// a test says how ranks ended, which are found alive after a restart and
// what a sweep finds, by the files of the local layout (LocateRank) so that
// tests name ranks as the local executor would find them.

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/tau_home.h"
#include "server/execution/executor.h"
#include "server/execution/local_rank_files.h"

namespace tau::server {

class FakeExecutor final : public Executor {
 public:
  bool PreparesAttempts() const override { return true; }
  Status Prepare(const AttemptPlan& plan) override {
    calls.push_back("prepare " + plan.job_id + " " + std::to_string(plan.attempt));
    prepared.push_back(plan);
    return fail_prepare;
  }
  void Discard(const std::string& job_id) override {
    calls.push_back("discard " + job_id);
    discarded.push_back(job_id);
  }
  Result<RankHandle> Start(const AttemptStart& start) override {
    calls.push_back("start " + start.ref.job_id + " " + std::to_string(start.ref.attempt) + " " +
                    std::to_string(start.ref.rank));
    starts.push_back(start);
    if (fail_start) return PermissionDeniedError("cannot start tau-shim");
    return RankHandle{next_pid++, 1};
  }
  Status Stop(const RankHandle& rank) override {
    stopped.push_back(rank.id);
    return Status::Ok();
  }
  Status Kill(const RankHandle& rank) override {
    killed_shims.push_back(rank.id);
    return Status::Ok();
  }
  Status Watch(uint64_t token, const RankHandle& rank) override {
    watched[token] = rank.id;
    return Status::Ok();
  }
  std::optional<RankHandle> Adopt(const RankRef& ref) override {
    auto it = lock_holders.find(Locate(ref).lock_path);
    if (it == lock_holders.end() || it->second <= 0) return std::nullopt;
    return RankHandle{it->second, 0};
  }
  Result<exec::ExitStatus> ReadEnd(const RankRef& ref) override {
    const std::string path = Locate(ref).status_path;
    if (auto bad = status_errors.find(path); bad != status_errors.end()) return bad->second;
    auto it = statuses.find(path);
    if (it == statuses.end()) return NotFoundError("no status");
    return it->second;
  }
  bool EndVouchedFor(const RankRef& ref) override {
    return unrecorded_status.count(home.attempt_lock(ref.job_id, ref.attempt, ref.rank).string()) == 0;
  }
  RankRemains Sweep(const RankRef& ref) override {
    const RankSweep sweep = Locate(ref);
    sweeps.push_back(sweep);
    if (on_sweep) on_sweep(ref);
    RankRemains r;
    r.alive = leftovers[sweep.status_path];
    r.killed = std::max(r.alive, killed[sweep.status_path]);
    if (r.alive > 0) r.why_alive = "still dying";
    r.may_have_run = never_ran.count(sweep.status_path) == 0;
    r.rebooted = rebooted;
    r.contained = contained;
    return r;
  }
  int64_t CountRemains(const RankRef& ref) override {
    const RankSweep sweep = Locate(ref);
    counts.push_back(sweep);
    return std::max(leftovers[sweep.status_path], killed[sweep.status_path]);
  }
  // The token a rank was watched by (0: none).
  uint64_t TokenOf(int64_t pid) const {
    for (const auto& [token, p] : watched) {
      if (p == pid) return token;
    }
    return 0;
  }

  // Where ranks' files would be (the JobManager's home; set by the test).
  TauHome home{"/nonexistent"};
  // Prepare, Discard and Start in the order they came: "prepare ID N",
  // "discard ID", "start ID N RANK".
  std::vector<std::string> calls;
  std::vector<AttemptPlan> prepared;
  std::vector<std::string> discarded;  // job ids
  Status fail_prepare = Status::Ok();  // what Prepare answers
  std::vector<AttemptStart> starts;
  std::vector<int64_t> stopped;  // handle ids
  std::vector<int64_t> killed_shims;  // handle ids
  std::map<uint64_t, int64_t> watched;  // token -> handle id
  std::map<std::string, int64_t> lock_holders;  // lock path -> handle id of a rank found alive
  std::map<std::string, exec::ExitStatus> statuses;  // status path -> how the rank ended
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
  std::vector<RankSweep> counts;  // CountRemains' calls
  std::function<void(const RankRef&)> on_sweep;  // called as each sweep kills
  std::map<std::string, int64_t> leftovers;
  std::map<std::string, int64_t> killed;
  std::set<std::string> never_ran;
  bool rebooted = false;
  bool contained = false;

 private:
  RankSweep Locate(const RankRef& ref) const { return LocateRank(home, nullptr, ref); }
};

}  // namespace tau::server
