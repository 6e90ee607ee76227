#include "server/execution/local_rank_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace tau::server {

namespace fs = std::filesystem;

std::string CgroupLeafName(const RankRef& ref) {
  return fmt::format("{}-{}-{}", ref.job_id, ref.attempt, ref.rank);
}

RankSweep LocateRank(const TauHome& home, const exec::CgroupDriver* cgroups, const RankRef& ref) {
  RankSweep at;
  const fs::path lock = home.attempt_lock(ref.job_id, ref.attempt, ref.rank);
  at.lock_path = lock.string();
  std::error_code ec;
  if (!fs::exists(lock, ec)) {
    const fs::path legacy = home.legacy_attempt_lock(ref.job_id, ref.attempt, ref.rank);
    if (fs::exists(legacy, ec)) at.lock_path = legacy.string();
  }
  at.status_path = home.status_file(ref.job_id, ref.attempt, ref.rank).string();
  at.env = {"TAU_JOB_ID=" + ref.job_id, fmt::format("TAU_ATTEMPT={}", ref.attempt),
            fmt::format("TAU_WORKER_INDEX={}", ref.rank)};
  if (cgroups) at.cgroup_dir = cgroups->LeafPath(CgroupLeafName(ref));
  return at;
}

}  // namespace tau::server
