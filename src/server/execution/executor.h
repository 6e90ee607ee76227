#pragma once

// The execution seam of the control plane: how the job code starts, stops
// and watches the ranks of an attempt, without knowing where they run.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "exec/exit_status.h"
#include "spec/job_spec.h"

namespace tau::server {

// One rank (worker) of one attempt of a job: the name the job code and
// every executor share for what runs.
struct RankRef {
  std::string job_id;
  int64_t attempt = 0;
  int rank = 0;
};

// A started rank as its executor knows it. The job code stores and shows
// it but never interprets it.
struct RankHandle {
  int64_t id = 0;     // the executor's number for it (locally: its tau-shim's pid)
  int64_t since = 0;  // tells a reused id apart (locally: that process's start ticks)
};

// Everything needed to start one rank of an attempt.
struct AttemptStart {
  RankRef ref;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // KEY=VALUE, complete
  std::string cwd;
  std::string log_path;
  int64_t grace_ms = 30000;
  int64_t deadline_ms = 0;
  // Limits of the local executor: the rank's cgroup ("" when cgroup limits
  // are not available), else the CPUs to pin to and its RLIMIT_DATA.
  std::string cgroup_dir;
  std::string cpu_list;
  int64_t rlimit_data = 0;
};

// What an attempt of a job will run, known when the job enters (or
// re-enters) its queue for that attempt, before admission: an executor
// that runs attempts as objects an external admission controller queues
// (Kubernetes with Kueue) creates them from it.
struct AttemptPlan {
  std::string job_id;
  int64_t attempt = 0;  // the number the attempt will have (1 for the first)
  spec::JobSpec spec;
  // The job's code snapshot: the tar the client uploaded (a blob file).
  std::string snapshot_path;
  // The TAU_* variables of the attempt (TAU_JOB_ID, TAU_JOB_NAME,
  // TAU_ATTEMPT, TAU_WORKSPACE, TAU_RETRY_REASON after a failure,
  // TAU_RESUME_FROM when it resumes), KEY=VALUE; runtime.env is in `spec`.
  std::vector<std::string> env;
  // From env files: given to the attempt, never shown. KEY=VALUE.
  std::vector<std::string> secret_env;
  // The checkpoint the attempt resumes from as the daemon knows it (an
  // absolute path under the job's checkpoint folder), "" for none.
  std::string resume_from;
};

// What the sweep of a rank that ended without recording how found.
struct RankRemains {
  int64_t killed = 0;        // processes of it that were alive and were killed
  int64_t alive = 0;         // of those, how many outlived the sweep's patience (sweep again)
  std::string why_alive;     // the sweep's account of them, when alive > 0
  bool rebooted = false;     // the machine restarted since the rank's supervisor ran
  // Something that held the whole rank (locally: a cgroup) was found empty:
  // nothing of it survives. False without one: a process that escaped the
  // rank would not have been found.
  bool contained = false;
  bool may_have_run = true;  // the rank got as far as starting the job
};

// Runs the ranks of attempts somewhere: locally under tau-shim
// (LocalExecutor), in tests as a fake (FakeExecutor). Called on the control
// loop only. A rank's end is reported through the callback its executor
// was made with, by the token given to Watch.
class Executor {
 public:
  virtual ~Executor() = default;
  // Whether Prepare does anything (the job code builds no AttemptPlan
  // for an executor that ignores it).
  virtual bool PreparesAttempts() const { return false; }
  // The job enters its queue for attempt `plan.attempt` (on submit, after
  // a restart, and before each retry). Called again for the same attempt
  // (after a restart, or when the job is queued anew) it must make nothing
  // twice. An error keeps the job waiting; the next pass calls it again.
  // Default: nothing to prepare (the attempt is made at Start).
  virtual Status Prepare(const AttemptPlan& plan) {
    (void)plan;
    return Status::Ok();
  }
  // The job's attempt ended, or the job was cancelled or removed: whatever
  // Prepare made for any attempt of it is let go of. Default: nothing.
  virtual void Discard(const std::string& job_id) { (void)job_id; }
  // Starts one rank. Once it returns a handle, the rank runs until it ends
  // by itself or is stopped, whatever becomes of the caller.
  virtual Result<RankHandle> Start(const AttemptStart& start) = 0;
  // Asks the rank to stop; it gets its grace period, then is killed.
  virtual Status Stop(const RankHandle& rank) = 0;
  // Kills a rank that did not stop when it should have (its supervisor
  // included); its end is then reported like any other.
  virtual Status Kill(const RankHandle& rank) = 0;
  // Reports `token` through the end callback once the rank is gone.
  virtual Status Watch(uint64_t token, const RankHandle& rank) = 0;
  // After a restart: the rank, when it still runs (then Watch it again).
  virtual std::optional<RankHandle> Adopt(const RankRef& ref) = 0;
  // How an ended rank ended. NotFound: nothing was recorded; another error:
  // what is where the record belongs is not one (the job's doing, so the
  // job ran), with why.
  virtual Result<exec::ExitStatus> ReadEnd(const RankRef& ref) = 0;
  // Whether the end ReadEnd found was recorded by the rank's supervisor,
  // not left by the job itself where the record belongs (then the rank is
  // taken as lost: the job may run on).
  virtual bool EndVouchedFor(const RankRef& ref) = 0;
  // Kills what is left of a rank that ended without a record of how, and
  // waits a little for it to be gone; the caller repeats it while `alive`
  // > 0.
  virtual RankRemains Sweep(const RankRef& ref) = 0;
  // How many processes (pods) of a rank that ended without a record of how
  // are alive now; kills nothing. The caller records that they are before
  // it Sweeps them.
  virtual int64_t CountRemains(const RankRef& ref) = 0;
};

}  // namespace tau::server
