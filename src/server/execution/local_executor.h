#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/tau_home.h"
#include "exec/cgroup.h"
#include "exec/process_watcher.h"
#include "server/execution/executor.h"
#include "server/execution/local_rank_files.h"

namespace tau::server {

// Runs each rank as a local process under tau-shim. The shim holds the
// attempt's lock file while it lives and writes the rank's exit status
// (LocateRank says where); a rank's handle is its shim's pid and start
// ticks, and its end is its shim's exit.
class LocalExecutor final : public Executor {
 public:
  // `on_exit` gets the token of each watched rank whose shim exited (on the
  // watcher's thread); `cgroups` nullptr: ranks have no cgroup.
  LocalExecutor(TauHome home, const exec::CgroupDriver* cgroups, std::string shim_path,
                std::function<void(uint64_t)> on_exit)
      : home_(std::move(home)), cgroups_(cgroups), shim_path_(std::move(shim_path)), watcher_(std::move(on_exit)) {}

  Result<RankHandle> Start(const AttemptStart& start) override;
  Status Stop(const RankHandle& rank) override;
  Status Kill(const RankHandle& rank) override;
  Status Watch(uint64_t token, const RankHandle& rank) override { return watcher_.Watch(token, rank.id); }
  // The live shim holding the rank's lock, if any.
  std::optional<RankHandle> Adopt(const RankRef& ref) override;
  Result<exec::ExitStatus> ReadEnd(const RankRef& ref) override;
  // The shim recorded in its lock file that it wrote the status.
  bool EndVouchedFor(const RankRef& ref) override;
  RankRemains Sweep(const RankRef& ref) override { return SweepAt(LocateRank(home_, cgroups_, ref)); }
  // Kills what is left of a rank whose shim is gone without a status (its
  // session, processes carrying its environment, its cgroup) and waits a
  // little for them to be gone.
  static RankRemains SweepAt(const RankSweep& sweep);
  int64_t CountRemains(const RankRef& ref) override { return CountAt(LocateRank(home_, cgroups_, ref)); }
  // How many live processes the rank left (the count-only probe of SweepAt).
  static int64_t CountAt(const RankSweep& sweep);

 private:
  TauHome home_;
  const exec::CgroupDriver* cgroups_;
  std::string shim_path_;
  exec::ProcessWatcher watcher_;
};

}  // namespace tau::server
