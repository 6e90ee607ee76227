#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tau::store {

// States of a job (docs/states.md). Terminal: Succeeded, Failed, Cancelled.
enum class JobState { kQueued, kAdmitted, kRunning, kRetrying, kSucceeded, kFailed, kCancelled };

std::string_view JobStateName(JobState s);
std::optional<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState s);

// States of one attempt (one run of a job).
enum class AttemptState { kStarting, kRunning, kSucceeded, kFailed, kCancelled };
std::string_view AttemptStateName(AttemptState s);
std::optional<AttemptState> ParseAttemptState(std::string_view name);

// Times are milliseconds since the Unix epoch.
struct JobRecord {
  std::string id;
  int64_t seq = 0;  // submission order, increasing
  std::string name;
  std::string workspace;
  std::string queue;
  JobState state = JobState::kQueued;
  std::string reason;   // typed reason of the last transition (ExitCode, Cancelled, ...)
  std::string message;  // human text for the reason
  std::optional<int64_t> exit_code;
  int64_t attempt = 0;  // number of the current or last attempt; 0 before the first
  std::string spec_json;
  std::string spec_sha256;
  std::string snapshot_digest;
  std::string submit_command;
  bool cancel_requested = false;
  // Ids of the jobs that must succeed first, comma-separated (depends_on
  // with names resolved at submit).
  std::string depends_on;
  // Secret environment variables as a JSON object ("" for none); never
  // shown to anyone.
  std::string secret_env;
  bool held = false;  // kept in its queue but not admitted (tau hold)
  // The WorkloadPriorityClass set with tau set-priority; "" keeps the spec's.
  std::string priority_class;
  // Set while the current attempt stops because it was preempted (by this
  // job id, or a stopPolicy): when it ends, the job is queued again.
  std::string preempted_by;
  // Retries spent: of the user's retry.max_restarts, and interruptions
  // (preempted, gpu_fault, node_lost) counted apart.
  int64_t restarts = 0;
  int64_t interruptions = 0;
  // While Retrying: when the backoff ends and the job is queued again.
  std::optional<int64_t> retry_at;
  // Why the next attempt runs ("exit:3", "preempted", "resume", ...): its
  // TAU_RETRY_REASON. "" before the first attempt.
  std::string retry_reason;
  // The checkpoint `tau resume --from` named for the next attempt; "" for
  // the newest.
  std::string resume_from;
  // The checkpoint index (resume/checkpoint_index.h), a JSON array.
  std::string checkpoints;
  // The job this one reproduces (tau reproduce), "" for none.
  std::string reproduces;
  // Evidence (docs/evidence.md): the blob digest of the part assembled at
  // submit, and of the whole capsule once the job has ended ("" before).
  std::string evidence_submit;
  std::string evidence;
  // Set while the current attempt stops because a GPU under it failed: the
  // reason its end gets (GpuFault: retried as gpu_fault; GpuXid: an
  // application-class XID, the job's own fault).
  std::string gpu_fault;
  int64_t created_at = 0;
  std::optional<int64_t> admitted_at;
  std::optional<int64_t> started_at;
  std::optional<int64_t> finished_at;
};

struct AttemptRecord {
  std::string job_id;
  int64_t number = 0;
  AttemptState state = AttemptState::kStarting;
  std::string reason;
  std::optional<int64_t> exit_code;
  std::optional<int64_t> signal;
  // The tau-shim process running the attempt and its start time in clock
  // ticks since boot (/proc/PID/stat field 22), which tells it apart from a
  // later process that reuses the pid.
  int64_t shim_pid = 0;
  int64_t shim_start_ticks = 0;
  std::string gpus;  // comma-separated GPU ids given to the attempt
  std::optional<int64_t> started_at;
  std::optional<int64_t> finished_at;
  // Without cgroups, the CPU ids each rank is pinned to: comma-separated,
  // ranks separated by ';' ("" when not pinned).
  std::string pinned_cpus;
  // Why this attempt ran (see JobRecord::retry_reason), and the absolute
  // path of the checkpoint it was given as TAU_RESUME_FROM ("" for none).
  std::string retry_reason;
  std::string resumed_from;
  int64_t peak_rss_kb = 0;  // the largest peak RSS of its ranks (0: unknown)
  // What admitted it: the ClusterQueue and the flavor of each resource
  // ("resource=flavor" comma-separated, by resource name).
  std::string cluster_queue;
  std::string flavors;
};

// A submit's client-chosen request id and the job it created
// (submit_requests).
struct SubmitRequestRecord {
  std::string request_id;
  std::string job_id;
  std::string spec_sha256;  // of the submitted spec: a different spec under the same id is refused
  int64_t created_at = 0;
};

// A Kueue object as applied (tau admin apply), JSON.
struct KueueObjectRecord {
  std::string kind;
  std::string namespace_;  // LocalQueue only
  std::string name;
  std::string json;
};

// One GPU's stored health (docs/gpu-health.md).
struct GpuRecord {
  std::string uuid;
  std::string state;  // Unknown, Healthy, Suspect, Unhealthy
  std::string reason;
  std::string message;
  int64_t since = 0;  // ms since the epoch
  bool drained = false;
};

struct GpuEventRecord {
  int64_t id = 0;
  int64_t at = 0;
  std::string uuid;
  std::string type;  // Healthy, Suspect, Unhealthy, Unknown, Xid, Drained, Undrained, Cleared
  std::string reason;
  std::string message;
};

struct EventRecord {
  int64_t id = 0;  // increasing across all jobs
  std::string job_id;
  int64_t at = 0;
  std::string type;  // Submitted, Admitted, Started, Succeeded, Failed, CancelRequested, ...
  std::string reason;
  std::string message;
};

}  // namespace tau::store
