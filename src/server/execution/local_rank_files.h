#pragma once

// Where the local executor keeps a rank: its tau-shim's lock and status
// files, the environment its processes carry, its cgroup.

#include <string>
#include <vector>

#include "common/tau_home.h"
#include "exec/cgroup.h"
#include "server/execution/executor.h"

namespace tau::server {

// Where the processes and records of one local rank are found.
struct RankSweep {
  std::string lock_path;
  std::string status_path;
  std::vector<std::string> env;  // KEY=VALUE its processes carry (exec::AttemptProcesses)
  std::string cgroup_dir;        // "" when it has no cgroup
};

// The name of a rank's cgroup leaf ("<job>-<attempt>-<rank>").
std::string CgroupLeafName(const RankRef& ref);

// Where `ref` is found. Its lock is in the state folder, or in the job's
// folder for a shim an earlier version started; `cgroups` nullptr: no
// cgroup.
RankSweep LocateRank(const TauHome& home, const exec::CgroupDriver* cgroups, const RankRef& ref);

}  // namespace tau::server
