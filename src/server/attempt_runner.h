#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "exec/exit_status.h"
#include "exec/process_watcher.h"
#include "exec/shim_launcher.h"

namespace tau::server {

// Everything needed to start one attempt (one rank) of a job.
struct AttemptStart {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // KEY=VALUE, complete
  std::string cwd;
  std::string log_path;
  std::string status_path;
  std::string lock_path;
  int64_t grace_ms = 30000;
  int64_t deadline_ms = 0;
  std::string cgroup_dir;  // "" when cgroup limits are not available
  std::string cpu_list;    // without cgroups: CPUs to pin to
  int64_t rlimit_data = 0; // without cgroups: RLIMIT_DATA
};

// One rank of an attempt whose shim is gone without a status.
struct RankSweep {
  std::string lock_path;
  std::string status_path;
  std::vector<std::string> env;  // KEY=VALUE its processes carry (exec::AttemptProcesses)
  std::string cgroup_dir;        // "" when it has no cgroup
};

// What the sweep of such a rank found.
struct RankRemains {
  int64_t killed = 0;        // processes of it that were alive and were sent SIGKILL
  int64_t alive = 0;         // of those, how many outlived the sweep's patience (sweep again)
  std::string why_alive;     // the sweep's account of them, when alive > 0
  bool rebooted = false;     // the machine restarted since the shim ran
  // A cgroup held the rank and was found empty: nothing of it survives.
  // False without one: a process that left the job's session and cleared
  // its environment would not have been found.
  bool contained = false;
  bool may_have_run = true;  // the shim got as far as starting the job
};

// The executor seam of the control plane: starts, stops and watches
// attempts. The local implementation runs each under tau-shim; the
// Kubernetes backend will create pods instead.
class AttemptRunner {
 public:
  virtual ~AttemptRunner() = default;
  virtual Result<exec::ShimProcess> Start(const AttemptStart& start) = 0;
  // Asks the attempt to stop; it gets its grace period, then SIGKILL.
  virtual Status Stop(const exec::ShimProcess& shim) = 0;
  // Kills a shim that did not stop its attempt when asked; its exit is
  // then reported like any other.
  virtual Status Kill(const exec::ShimProcess& shim) = 0;
  // Reports `token` through the exit callback once `pid` is gone.
  virtual Status Watch(uint64_t token, int64_t pid) = 0;
  // Pid of the live shim holding an attempt's lock, if any.
  virtual std::optional<int64_t> LockHolder(const std::string& lock_path) = 0;
  virtual Result<exec::ExitStatus> ReadStatus(const std::string& status_path) = 0;
  // Whether the shim whose lock is `lock_path` recorded there that it wrote
  // the rank's status, once nothing of its job was left. The lock file is
  // in the daemon's state folder; the status, in the job's, may be the
  // job's own.
  virtual bool StatusWrittenByShim(const std::string& lock_path) = 0;
  // Kills what is left of a rank whose shim is gone without a status (its
  // session, processes carrying its environment, its cgroup) and waits a
  // little for them to be gone; the caller repeats it while `alive` > 0.
  virtual RankRemains Sweep(const RankSweep& sweep) = 0;
};

// Runs attempts as local processes under tau-shim.
class LocalAttemptRunner final : public AttemptRunner {
 public:
  LocalAttemptRunner(std::string shim_path, std::function<void(uint64_t)> on_exit)
      : shim_path_(std::move(shim_path)), watcher_(std::move(on_exit)) {}

  Result<exec::ShimProcess> Start(const AttemptStart& start) override;
  Status Stop(const exec::ShimProcess& shim) override { return exec::TerminateShim(shim); }
  Status Kill(const exec::ShimProcess& shim) override { return exec::KillShim(shim); }
  Status Watch(uint64_t token, int64_t pid) override { return watcher_.Watch(token, pid); }
  std::optional<int64_t> LockHolder(const std::string& lock_path) override {
    return exec::AttemptLockHolder(lock_path);
  }
  Result<exec::ExitStatus> ReadStatus(const std::string& path) override {
    return exec::ReadExitStatus(path);
  }
  bool StatusWrittenByShim(const std::string& lock_path) override;
  RankRemains Sweep(const RankSweep& sweep) override;

 private:
  std::string shim_path_;
  exec::ProcessWatcher watcher_;
};

}  // namespace tau::server
