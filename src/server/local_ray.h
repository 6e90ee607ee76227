#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "spec/job_spec.h"

namespace tau::server {

// workload_kind rayjob on the local executor: one attempt is one process
// under tau-shim (rank 0) that runs a whole Ray cluster on 127.0.0.1 for
// the job, submits the entrypoint to it as a Ray job, copies the job's log
// into the attempt's log, and stops every Ray process before it exits
// (docs/execution.md, "Local Ray").
struct LocalRaySetup {
  // The Python that has Ray installed, or "python3" (taken from PATH) when
  // the attempt runs inside a runtime.pip environment layered on it.
  std::string python;
  // Ray's --temp-dir: short, because Ray puts unix sockets below it and a
  // socket path holds at most 107 bytes. Removed when the cluster stops.
  std::string temp_dir;
  int64_t nodes = 1;          // worker nodes (compute.workers)
  int64_t cpus_per_node = 1;  // whole CPUs Ray schedules on each node
  int64_t gpus_per_node = 0;
  int64_t memory_per_node = 0;  // bytes
  std::string logs_dir;       // where Ray's own logs are kept afterwards
  std::string submission_id;  // the Ray job's id
  std::string entrypoint;     // one shell line (spec::BuildRayEntrypoint)
  // Written before the cluster starts: {"version", "python",
  // "python_executable"} of the Ray it runs on, for the evidence.
  std::string info_file;
};

// The attempt's command: PYTHON -c SCRIPT ARGS...
std::vector<std::string> LocalRayCommand(const LocalRaySetup& setup);

// The program the command runs, for tests that check it compiles.
const char* LocalRayScript();

// How many processes tau-shim supervises per attempt of `spec`: one per
// worker, or one for a whole local Ray cluster.
int AttemptRanks(const spec::JobSpec& spec);

// What one of those processes may use (its cgroup limits, or the CPUs it
// is pinned to): a worker's share, or for a local Ray cluster all its
// worker nodes' shares plus room for its head (GCS, dashboard).
struct RankShare {
  int64_t cpus_milli = 0;
  int64_t memory_bytes = 0;
};
RankShare AttemptRankShare(const spec::JobSpec& spec);

// The Python interpreter Ray runs on: the one named by the first line of
// the `ray` program, which is `ray_program` when set (taugridd --ray,
// TAU_RAY) or else the first `ray` on `path` (a PATH value).
// FailedPrecondition, saying how to get Ray, when there is none.
Result<std::string> FindRayPython(const std::string& ray_program, const std::string& path);

// How much longer than the job's grace period a local Ray cluster gets to
// stop: the Ray job first, then every node, then copying Ray's logs.
inline constexpr int64_t kLocalRayStopMs = 20000;

}  // namespace tau::server
