#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/tau_home.h"
#include "evidence/file_list.h"
#include "exec/cgroup.h"
#include "gpu/gpu_health.h"
#include "gpu/gpu_source.h"
#include "metrics/registry.h"
#include "progress/progress.h"
#include "sched/admission_engine.h"
#include "sched/admission_policy.h"
#include "server/admission/admission.h"
#include "server/execution/executor.h"
#include "server/evidence_capsule.h"
#include "server/job_history.h"
#include "server/state_view.h"
#include "spec/job_spec.h"
#include "store/job_store.h"

namespace tau::server {

struct SubmitRequest {
  std::string spec_json;        // the resolved spec (tau validate -o json)
  std::string snapshot_digest;  // "sha256:HEX" of an uploaded blob
  std::string submit_command;   // how the user submitted it, for the record
  spec::StringPairs secret_env; // from env files: given to attempts, never shown
  // What tau run saw on the client, for the evidence: {"git": {...}} (JSON
  // text, "" for nothing).
  std::string client_evidence_json;
  // The job this one reproduces (tau reproduce), "" for none.
  std::string reproduces;
  // Chosen by the client, unique per submit ("" for none): a submit whose
  // id was seen before creates nothing and returns the job the first one
  // created, so a client may send it again after a lost connection.
  std::string request_id;
};

// A job's folder made ready off the control loop (JobManager::PrepareSubmit):
// its spec decoded and its code snapshot unpacked, with the digests of the
// unpacked files for its evidence.
struct PreparedJob {
  std::string id;
  spec::JobSpec spec;
  std::vector<evidence::FileDigest> code_files;
  // The spec's canonical JSON and its SHA-256, made once.
  std::string spec_json;
  std::string spec_sha256;
  int64_t created_at = 0;  // ms since the epoch; 0: when committed
  // The submit part of the evidence, written and fsynced with the folder
  // so the loop does neither; "" when the loop writes it (a request naming
  // the job it reproduces without that job's git state, resolved there).
  std::string evidence_submit;
};

struct JobManagerOptions {
  sched::Resources capacity;
  // The environment every job starts from (the daemon's, less TAU_*).
  std::vector<std::string> base_env;
  // Runs a task on the control loop after the current one (ControlLoop::Post).
  // A submit is acknowledged as soon as it is committed, and the admission
  // pass it triggers runs next, once for however many submits arrived
  // meanwhile. When unset, admission runs before Submit returns.
  std::function<void(std::function<void()>)> defer;
  // cgroup v2 limits per rank, when the host delegates them; nullptr: none.
  // Without cgroups: the kernel's count of OOM kills (exec::ReadOomKillCount),
  // read when an attempt starts and when a rank is killed by SIGKILL, to
  // tell an OOM kill (exec/oom_evidence.h); unset: not read.
  std::function<std::optional<int64_t>()> oom_kill_count;
  exec::CgroupDriver* cgroups = nullptr;
  // Without cgroups, ranks are pinned to ceil(cpus) of these CPUs (the
  // least loaded ones) and get RLIMIT_DATA = their memory. Empty: no pinning.
  std::vector<int> cpu_ids;
  // The Kueue configuration admission enforces (quotas, queues,
  // priorities); the machine's capacity stays a hard bound on top.
  sched::KueueConfig kueue;
  // Decides admission (server/admission); nullptr: the embedded engine
  // (EmbeddedAdmission), owned by the manager.
  Admission* admission = nullptr;
  // Kueue manifests stored on a fresh install (Recover), when the store
  // holds no configuration yet. Empty: keep `kueue` unstored.
  std::string default_manifests;
  // How many interruptions (preempted, gpu_fault, node_lost) a job is
  // retried for, in all; they never count against retry.max_restarts.
  int64_t max_interruptions = 10;
  // Runs a task on the control loop after a delay (ControlLoop::PostAfter):
  // the end of retry backoffs. Unset: nothing is armed and WakeRetries is
  // called by hand (tests).
  std::function<void(std::chrono::milliseconds, std::function<void()>)> after;
  // Runs slow file work (checkpoint digests) off the control loop; its
  // result comes back through `defer`. Unset: inline.
  std::function<void(std::function<void()>)> background;
  // The machine as the evidence records it (host facts and GPUs), JSON
  // text; "" for unknown.
  std::string host_json;
  // The machine's GPUs by index (capacity.gpus of them), handed out by UUID.
  std::vector<gpu::GpuInfo> gpu_info;
  // True when the GPUs are watched (NVML): they start Unknown and are given
  // work after their first good poll. False (no NVML; GPUs listed by an
  // operator): they are taken as Healthy.
  bool gpu_health_monitored = false;
  gpu::XidCatalog xid_catalog = gpu::XidCatalog::Defaults();
  gpu::HealthThresholds health_thresholds;
  // GPUs with compute processes TauGrid did not start are not handed out
  // while they have them, unless this is set.
  bool allow_foreign_gpu_processes = false;
  // A running job whose TAU_METRICS_FILE gets no line for this long is
  // stalled (an event and a metric); 0: never.
  std::chrono::milliseconds progress_stall_after = std::chrono::minutes(10);
  // Where job events are counted (docs/observability.md); nullptr: nowhere.
  metrics::Registry* metrics = nullptr;
  std::string hostname;  // the Hostname label of the GPU metrics
  // A random number in [0, 1) for backoff jitter. Unset: a seeded PRNG.
  std::function<double()> jitter;
  // The `ray` program for local rayjobs (taugridd --ray, TAU_RAY); "": the
  // first `ray` on the PATH of base_env.
  std::string ray_program;
  // history.keep: how many ended jobs are kept (the most recently ended);
  // older ones are removed with their files as others end. nullopt: all.
  std::optional<int64_t> history_keep = 10000;
  // How long a change that records what has already happened (an
  // attempt's start, a sealed capsule's digest) may wait to be written with
  // a later one (JobManager::Deferring); 0: written at once. Needs `after`.
  std::chrono::milliseconds deferred_write_delay{0};
  // False when attempts run on a cluster (the Kubernetes backend), whose
  // scheduler places them: the machine's capacity bounds nothing, no GPU
  // is handed out, and a rayjob needs no local Ray (KubeRay runs it).
  bool runs_locally = true;
  // The largest code snapshot a submit may carry (bytes; 0: no limit), and
  // why (appended to the refusal).
  int64_t max_snapshot_bytes = 0;
  std::string max_snapshot_why;
  // Called on the thread that unpacked a job's snapshot, right after (a
  // test hook); unset: nothing.
  std::function<void()> on_snapshot_unpacked;
  // Called on the thread that assembles an evidence capsule, before it
  // reads anything (a test hook); unset: nothing.
  std::function<void()> on_evidence_assembling;
  // Called on the thread that writes a sealed capsule, before the write
  // (a test hook): an error it returns fails that write as a full or
  // broken disk would. Unset: nothing.
  std::function<Status()> before_capsule_write;
};

// What a job's evidence capsule is made from, copied from the loop's
// state so that it is assembled off the loop (JobManager::AssembleEvidence).
struct EvidenceSource {
  std::string sealed_blob;  // the sealed capsule's file; "" while it is live
  std::string submit_blob;  // the submit part's file
  CapsuleInputs inputs;     // the job's records; its submit part and events are read later
};

// Defines the taugrid_* and DCGM_* metric families (docs/observability.md).
void DefineMetrics(metrics::Registry& registry, const std::string& version);

// The manifests of the default configuration (see DefaultKueueConfig).
std::string DefaultKueueManifests(const sched::Resources& capacity, const std::string& gpu_class = "");

// One object of the Kueue configuration, by kind, workspace and name.
struct KueueObjectKey {
  std::string kind;
  std::string namespace_;
  std::string name;
};

// The default Kueue configuration of a fresh install: ResourceFlavor
// "default", ClusterQueue "default" covering the whole machine (cpu, memory,
// nvidia.com/gpu), LocalQueue "default" in workspace "default".
// When every GPU is of one class, the flavor carries it as the node label
// taugrid.io/gpu-class, as a ResourceFlavor for those nodes would.
sched::KueueConfig DefaultKueueConfig(const sched::Resources& capacity, const std::string& gpu_class = "");

// Runs jobs through their states (docs/states.md, decided by
// server/jobs/job_state_machine.h), admitted by an Admission and run by an
// Executor. Owned by the control-loop thread:
// every method must be called on it. Each change is committed to the store
// before it is acted on (a process started or signalled) or acknowledged,
// and a new StateView is published after it.
class JobManager {
 public:
  JobManager(TauHome home, store::JobStore* store, Executor* executor,
             const sched::AdmissionPolicy* policy, const Clock* clock, JobManagerOptions options,
             StatePublisher* publisher);
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Loads the store and reconciles it with the processes that ran while no
  // daemon watched them: live attempts are re-adopted, ended ones get their
  // real exit status, attempts that never started are queued again.
  Status Recover();

  // Prepares the job's folder (PrepareSubmit), then submits it: for tests
  // and callers already on the loop. The API prepares off the loop (see
  // SubmitOffLoop) and calls the two-argument Submit on it.
  Result<std::shared_ptr<const JobView>> Submit(const SubmitRequest& request);
  // Checks `request` against the state (quotas, depends_on, ...), records
  // its evidence and commits the job whose folder `prepared` holds; on an
  // error the folder is removed.
  Result<std::shared_ptr<const JobView>> Submit(const SubmitRequest& request, const PreparedJob& prepared);
  // The slow part of a submit, safe on any thread (it reads no state of the
  // loop): decodes the spec and unpacks the snapshot into a new job folder.
  Result<PreparedJob> PrepareSubmit(const SubmitRequest& request) const;
  // Removes the folder of a prepared job that was not submitted.
  void DiscardPrepared(const PreparedJob& prepared) const;
  // The job a submit with the same `request.request_id` already made
  // (whether or not the disk has room now), nullptr when the id is new or
  // absent; an error when the id was used for another spec or code, or its
  // job was removed. Runs on the loop, before anything is unpacked.
  Result<std::shared_ptr<const JobView>> FindRepeatedSubmit(const SubmitRequest& request);
  // Queued jobs end at once; running ones get SIGTERM, then SIGKILL after
  // their grace period, and end Cancelled when their process is gone.
  Result<std::shared_ptr<const JobView>> Cancel(const std::string& id_or_name);
  // Deletes a finished job with its files.
  Status Remove(const std::string& id_or_name);
  // Removes finished jobs that ended more than `age` ago, and those older
  // than the `keep` most recently ended; returns their ids, oldest first.
  // At least one of the two must be given.
  Result<std::vector<std::string>> Prune(std::optional<std::chrono::milliseconds> age, std::optional<int64_t> keep);

  // Lets go of the ended jobs nothing is left to do for (their evidence
  // sealed, their checkpoints indexed); they are read from the database
  // from then on. Then applies history.keep. Runs after each task that
  // ends a job (JobManagerOptions::defer); tests call it by hand.
  void EvictEnded();
  // How many jobs the loop holds in memory.
  size_t HeldJobs() const;

  // Upserts (by kind, namespace and name, like kubectl apply) and deletes
  // Kueue objects, validates the result as a whole and, when it holds,
  // stores it (a new configuration version) and admits against it.
  // `upserts` is manifest text already checked by DecodeKueueManifests.
  Result<std::vector<std::string>> ApplyKueue(const std::string& upserts, const std::vector<KueueObjectKey>& deletes);
  // Stored objects as JSON, optionally of one kind and name.
  std::vector<store::KueueObjectRecord> KueueObjects() const { return kueue_objects_; }

  // Per ClusterQueue: quota, usage and borrowing per flavor and resource,
  // and pending/admitted counts; per LocalQueue: counts. JSON text.
  std::string QueuesJson() const;
  // Why a job waits: its reason, message and queue position, and the jobs
  // holding the quota it needs. JSON text.
  Result<std::string> WhyJson(const std::string& id_or_name);

  // Changes a queued job's WorkloadPriorityClass (it must exist).
  Result<std::shared_ptr<const JobView>> SetPriority(const std::string& id_or_name, const std::string& priority_class);

  // Keeps a queued job in its place without admitting it, or lets it go.
  Result<std::shared_ptr<const JobView>> SetHeld(const std::string& id_or_name, bool held);

  // The shim behind `token` is gone (for an executor on a cluster: the
  // rank behind `token` ended).
  void OnShimExit(uint64_t token);

  // What admission decides from changed outside the manager (a Kueue
  // Workload was admitted or evicted): an admission pass runs soon.
  void OnAdmissionChanged() { ScheduleAdmission(); }

  // Starts a new attempt of an ended job (Succeeded, Failed, Cancelled)
  // with its original snapshot and spec, from checkpoint `from` (a name in
  // its index) or, when empty, its newest complete one. The retry budget
  // starts again.
  Result<std::shared_ptr<const JobView>> Resume(const std::string& id_or_name, const std::string& from);

  // Submits a new job with `id_or_name`'s code snapshot, spec (with
  // `overrides`, PATH=VALUE, applied and validated again) and secret
  // environment, linked to it (reproduces). `request_id` as in
  // SubmitRequest.
  Result<std::shared_ptr<const JobView>> Reproduce(const std::string& id_or_name,
                                                   const std::vector<std::string>& overrides,
                                                   const std::string& submit_command,
                                                   const std::string& request_id = "");
  // The submit request Reproduce makes, to be prepared off the loop.
  Result<SubmitRequest> ReproduceRequest(const std::string& id_or_name, const std::vector<std::string>& overrides,
                                         const std::string& submit_command, const std::string& request_id = "");

  // The job's evidence capsule (docs/evidence.md) as JSON text, in two
  // steps (see EvidenceOffLoop): EvidenceSourceOf copies what it is made
  // from on the loop; AssembleEvidence, safe on any thread, reads the
  // files and the job's events (on a database connection of its own) and
  // returns the sealed capsule once the job has ended, else one assembled
  // now (log sizes without digests, "complete": false).
  Result<EvidenceSource> EvidenceSourceOf(const std::string& id_or_name);
  Result<std::string> AssembleEvidence(EvidenceSource source) const;

  // GPU health (job_manager_gpus.cc): a poll of GPU `index`, and an XID
  // event, as the GPU monitor reads them.
  void OnGpuSample(int index, gpu::GpuSample sample);
  void OnGpuXid(gpu::XidEvent event);
  // GPU `index`'s XID events cannot be read (`why`), or can again
  // (nullopt): it is Suspect meanwhile.
  void OnGpuXidUnreadable(int index, std::optional<std::string> why);
  // On a cluster: the node agent reports a fatal GPU fault on a node these
  // attempts' pods (job id, attempt) run on. Each that is its job's
  // running attempt is stopped with reason GpuFault and retried from its
  // checkpoint, not charged, as on a machine of its own (jobs already
  // stopping are left alone; an earlier attempt's pod still going away
  // does not fault the job's next one; attempt 0: not known, the current).
  void FaultJobsOnNode(const std::vector<std::pair<std::string, int64_t>>& attempts, const std::string& message);
  // tau admin gpu clear / drain / undrain GPU, where GPU is an index, a
  // UUID or a UUID's unique prefix (FindGpu).
  Status ClearGpu(const std::string& gpu);
  Status DrainGpu(const std::string& gpu, bool drained);
  // The UUID of the GPU an operator names as FindGpu takes it.
  Result<std::string> GpuUuidOf(const std::string& gpu) const;
  // The machine's GPUs with health, telemetry and the job on each, and the
  // recent GPU events (JSON text).
  std::string GpusJson();

  // Reads what running jobs appended to TAU_METRICS_FILE (progress, rate,
  // ETA) and marks stalled ones; the daemon calls it every few seconds.
  void RefreshProgress();

  // Sets the gauges that are read from state (jobs by state, queues, quota,
  // GPUs) in options.metrics; called before each scrape of /metrics.
  void CollectMetrics();

  // How long a change that could not be committed waits before it is
  // tried again (WakeRetries, RetryStoreWrites), so a full disk costs no
  // busy loop.
  static constexpr std::chrono::milliseconds kStoreRetryDelay{5000};
  // How soon a rank's exit status that could not be read for a shortage
  // (IsTransientReadError) is read again.
  static constexpr std::chrono::milliseconds kStatusRereadDelay{500};

  // Whether the store is in the DiskFull condition (OnStoreWrite).
  bool DiskFull() const { return disk_full_; }

  // While the store is in the DiskFull condition: commits again the
  // changes Recover could not commit, then probes the disk with a small
  // write, which ends the condition when it succeeds. Runs every
  // kStoreRetryDelay from the timer JobManagerOptions::after arms; tests
  // call it by hand.
  void RetryStoreWrites();

  // How long a submit's request_id is remembered (a client sends a submit
  // again within seconds; a week covers any retry). Prune and history.keep
  // remove a job's ids with it; tau rm keeps them, so a submit sent again
  // after it is told its job was removed.
  static constexpr std::chrono::hours kSubmitRequestKeep{24 * 7};

  // Queues the Retrying jobs whose backoff has ended. Runs from the timer
  // JobManagerOptions::after arms; tests call it after moving the clock.
  void WakeRetries();

  // Indexes (and prunes) the checkpoints of every running job; the daemon
  // calls it periodically (checkpoint_index_interval).
  void RefreshRunningCheckpoints();

  // Sweeps again the ranks whose shim is gone while processes of theirs
  // still run, and ends those with none left (job_manager_lost.cc). Runs
  // from the timer JobManagerOptions::after arms; tests call it by hand.
  void SweepLostRanks();

  // Writes every job's deferred changes in one transaction (see
  // Deferring); on failure they stay deferred and are tried again after
  // kStoreRetryDelay. The daemon calls it before it stops.
  void FlushDeferred();

 private:
  struct Job {
    store::JobRecord rec;
    std::vector<store::AttemptRecord> attempts;
    spec::JobSpec spec;
    spec::StringPairs secret_env;
    sched::Resources request;
    bool holds_resources = false;
    // One per worker (rank) of the current attempt.
    struct Rank {
      std::string cgroup;  // leaf name when cgroups are used
      std::vector<int> pinned;  // indexes into cpu_ids, without cgroups
      int64_t load_per_cpu = 0;
      std::optional<RankHandle> handle;  // while it runs
      uint64_t token = 0;
      bool done = false;
      // Its shim is gone without a status and processes of it were found
      // alive: they are being killed, and the rank ends once none is left.
      bool draining = false;
      bool killed_leftovers = false;  // processes of it were found after its shim was gone
      bool loss_unrecorded = false;   // that they were could not be committed yet (their kill waits)
      // Its shim is gone and what is at its status file is not a status
      // (a fifo, a link, not JSON): why. Its job may have run.
      std::string unreadable_status;
      // Its shim is gone and left a status it did not record writing (the
      // job may have written it): the status is not taken, and the rank
      // ends Lost or Unknown.
      std::optional<exec::ExitStatus> unvouched_status;
    };
    std::vector<Rank> ranks;
    // The first rank that failed; the others are being stopped.
    std::optional<Result<exec::ExitStatus>> first_failure;
    bool oom_killed = false;  // the kernel OOM-killed a process of a rank
    std::string oom_evidence;  // without cgroups: what says it was (exec/oom_evidence.h)
    std::optional<int64_t> oom_kills_at_start;  // the kernel's OOM kill count when the attempt started
    // A rank's shim is gone with no status and nothing of it left running:
    // how the attempt ended is unknown (reason Unknown, not an interruption).
    bool end_unknown = false;
    // A shim still there past limits.max_runtime and its grace period was
    // killed: the attempt ended at its deadline.
    bool deadline_backstop = false;
    std::vector<int> gpu_indexes;
    // TAU_RESUME_FROM of the current attempt ("" for none).
    std::string resumed_from;
    // A checkpoint index is being built off the loop (see RefreshCheckpoints).
    bool indexing = false;
    bool index_again = false;  // another refresh was asked for meanwhile
    bool sealing_evidence = false;  // the capsule is being completed off the loop
    // Why the last try to seal the capsule failed ("" when none failed):
    // sealing is tried again every kStoreRetryDelay, and the job is kept
    // in memory (not Evictable) until it is sealed.
    std::string evidence_error;
    std::string gpu_fault_message;  // why rec.gpu_fault was set
    int64_t peak_rss_kb = 0;  // of the current attempt's ranks so far
    // TAU_METRICS_FILE, followed from `metrics_offset`.
    std::shared_ptr<progress::Tracker> progress;
    int64_t metrics_offset = 0;
    bool progress_stalled = false;
    std::shared_ptr<const JobView> view;  // reset when the job changes
    // Changes recorded but not yet written (job_manager_deferred.cc): the
    // record, attempts by number, and events, in the order they happened.
    struct Deferred {
      bool record = false;
      std::vector<int64_t> attempts;
      std::vector<store::EventRecord> events;
      bool any() const { return record || !attempts.empty() || !events.empty(); }
    } deferred;
  };

  // The stored (canonical JSON) spec decoded again, and what it asks for.
  static Result<spec::JobSpec> DecodeSpec(const std::string& json);
  static sched::Resources RequestOf(const spec::JobSpec& spec);

  // The job with this id, else the newest job with this name; an ended job
  // the loop let go of is read from the database and held again until the
  // next EvictEnded.
  Result<Job*> Find(const std::string& id_or_name);
  Result<std::unique_ptr<Job>> JobFromRecord(store::JobRecord rec, std::vector<store::AttemptRecord> attempts);
  Job* Hold(std::unique_ptr<Job> job);
  // History (job_manager_history.cc).
  bool Evictable(const Job& job) const;
  void ScheduleEviction();
  void Forget(const std::string& id);  // drops the job from memory only
  // Deletes the job's folder and evidence blobs: now, or off the loop
  // (JobManagerOptions::background) for the many that prune removes.
  void RemoveFiles(const store::JobRecord& rec, bool now);
  Result<std::vector<std::string>> PruneEnded(std::optional<std::chrono::milliseconds> age,
                                              std::optional<int64_t> keep);
  // Deletes the submit request ids older than kSubmitRequestKeep, at most
  // once a minute (kSubmitRequestSweepEvery): each sweep is a write
  // transaction, and ids live for a week.
  void ForgetOldSubmitRequests();
  static constexpr std::chrono::minutes kSubmitRequestSweepEvery{1};
  int64_t submit_requests_swept_at_ = 0;  // ms; 0: never
  // Deletes job folders without a job in the database (Recover).
  void RemoveOrphanFiles();
  // Submit's checks and commit; the caller removes the folder on an error.
  Result<std::shared_ptr<const JobView>> SubmitPrepared(const SubmitRequest& request, const PreparedJob& prepared);
  Result<std::shared_ptr<const JobView>> FindRepeatedSubmit(const SubmitRequest& request, const std::string& spec_sha256);
  // The job as the admission engine sees it; NotFound when its priority
  // class does not exist.
  Result<sched::Workload> ToWorkload(const Job& job) const;
  // Updates a queued job's reason and message (persisted, no event).
  void SetWaitingReason(Job& job, const std::string& reason, const std::string& message);
  // Created by the runtime.pip wrapper when installing failed.
  std::string SetupFailedMarker(const std::string& id, int64_t attempt, int rank) const;
  // A local rayjob's Ray --temp-dir for one attempt (short: see LocalRaySetup).
  static std::string RayTempDir(const std::string& id, int64_t attempt);
  // The Python with Ray that runs local rayjobs (see FindRayPython).
  Result<std::string> RayPython() const;
  int64_t NowMs() const;
  Status AppendEvent(Job& job, std::string type, std::string reason, std::string message);
  // Deferred writes (job_manager_deferred.cc). Some changes record what has
  // already happened and would be found again by a restarted daemon: that
  // an attempt's processes started (a live shim or its status says so), and
  // a sealed capsule's digest (an ended job without one is sealed again).
  // They need not be durable before anything is acted on, so they are not
  // committed on their own: they are written with the job's next write (in
  // its transaction, before it), or by FlushDeferred, which writes those of
  // every job in one transaction JobManagerOptions::deferred_write_delay
  // after the first. With no delay (or no timer) they are written at once.
  bool Deferring() const { return options_.after && options_.deferred_write_delay.count() > 0; }
  Status DeferSaveJob(Job& job);
  Status DeferSaveAttempt(Job& job, const store::AttemptRecord& attempt);
  Status DeferEvent(Job& job, std::string type, std::string reason, std::string message);
  // Writes the job's deferred changes now, in the caller's transaction when
  // one is open; `record_follows`: the caller writes the record next.
  Status WriteDeferred(Job& job, bool record_follows = false);
  void ArmDeferredFlush();
  bool deferred_flush_armed_ = false;
  Status SaveJob(Job& job);
  Status SaveAttempt(Job& job, const store::AttemptRecord& attempt);

  enum class Dependencies { kReady, kWaiting, kFailed };
  Dependencies CheckDependencies(Job& job);
  void RunAdmission();
  // Runs RunAdmission soon (see JobManagerOptions::defer).
  void ScheduleAdmission();
  // Tells the executor the job enters its queue for its next attempt
  // (Executor::Prepare); an error is the job's waiting reason.
  Status PrepareAttempt(Job& job);
  // `admitted`: the decision that lets it start (its ClusterQueue and
  // flavors are recorded with the attempt).
  void StartAttempt(Job& job, const sched::Admission& admitted);
  void FinishAttempt(Job& job, const Result<exec::ExitStatus>& status);
  // Records that `rank` of the current attempt ended with `status`: stops
  // the other ranks on the first failure, and finishes the attempt once
  // every rank has ended.
  void RankEnded(Job& job, int rank, const Result<exec::ExitStatus>& status);
  // A rank's shim is gone without recording an exit status, or with one
  // that cannot be read (job_manager_lost.cc): every process of the rank is
  // killed before the rank ends, so a retry never runs beside what is left
  // of this attempt, and an attempt that may have run is retried as an
  // interruption only when a cgroup proved nothing of it is left.
  void ShimLost(Job& job, int rank);
  // The status of a rank whose shim is gone: its exit status, or NotFound
  // after noting in the rank why it cannot be read (then the rank is lost,
  // and its job may have run).
  Result<exec::ExitStatus> ReadRankStatus(Job& job, int rank);
  // A rank whose shim is gone left `status`. The rank ends with it when
  // the shim recorded in its lock file that it wrote it; otherwise the job
  // may have written it (to be retried while a copy of it runs on), so the
  // rank is a lost shim's: what is left of it is killed, and it ends Lost
  // or Unknown whatever the status says.
  void RankStatusFound(Job& job, int rank, const exec::ExitStatus& status);
  // After a restart: the ranks of the current attempt whose shim an
  // earlier daemon recorded as lost while processes of the rank still ran
  // (its ShimLost event). Such an attempt was interrupted, however its
  // ranks look now.
  Result<std::vector<int>> RanksLostWhileRunning(const Job& job);
  // Counts those ranks' leftovers as killed and the attempt as lost, before
  // any other rank's end (say the SIGTERM of a gang's teardown) is taken as
  // the attempt's failure.
  void MarkLostWhileRunning(Job& job, const std::vector<int>& ranks);
  // Rank `rank` of the job's current attempt.
  static RankRef RefOf(const Job& job, int rank);
  void ArmSweepTimer(std::chrono::milliseconds delay);
  // Commits the ShimLost event of a rank whose processes (`found` of them)
  // outlived its shim, then marks them killed (MarkLeftoversKilled). False,
  // with nothing marked, when the commit fails: the caller kills nothing.
  bool RecordLostWhileRunning(Job& job, int rank, int64_t found);
  // The rank's leftovers are being killed: the attempt is over, its other
  // ranks are stopped.
  void MarkLeftoversKilled(Job& job, int rank);
  // A shim that should have ended its job `after` from now (it was asked
  // to stop, or reaches limits.max_runtime, and its grace period is over)
  // and is still there then, with a margin (its own job stopped it with
  // SIGSTOP, say), is killed: its rank ends as a lost shim's, once its
  // processes are swept. `deadline`: the attempt then ended at its deadline.
  void ArmShimBackstop(Job& job, std::chrono::milliseconds after, bool deadline);
  // How long a shim gives its job between SIGTERM and SIGKILL.
  static std::chrono::milliseconds ShimGrace(const Job& job);
  bool sweep_timer_armed_ = false;
  // Watches a started or adopted rank.
  void WatchRank(Job& job, int rank, RankHandle handle);
  void StopRanks(Job& job);
  void Release(Job& job);
  // The CPUs the ranks are pinned to, as stored in the attempt record, and
  // back: restoring counts their load again (after a restart).
  std::string PinnedCpus(const Job& job) const;
  std::string CpuList(const Job::Rank& rank) const;  // "4,7": the CPU ids a rank is pinned to
  void RestorePinning(Job& job, const std::string& pinned_cpus);
  AttemptStart BuildAttemptStart(const Job& job, int64_t attempt, int rank, int port,
                                 const std::string& ray_python) const;
  // Retries (job_manager_retry.cc). Decides what follows a failed attempt
  // whose reason is `reason`: kQueued (again now), kRetrying (after a
  // backoff, retry_at set) or kFailed; updates the budget and the
  // TAU_RETRY_REASON of the next attempt and appends the decision to
  // `message`.
  // `signal`: the signal that killed the attempt (reason Signal), else 0.
  store::JobState ApplyRetryPolicy(Job& job, const std::string& reason, int signal, std::string* message);
  // Makes WakeRetries run when the earliest backoff ends.
  void ArmRetryTimer();
  // Kueue's requeuing strategy (the Configuration's waitForPodsReady), for
  // a job queued again after the engine evicted it (preempted or drained):
  // its n-th eviction waits sched::RequeueDelayMs before it may be admitted
  // again (rec.retry_at holds when, while it is queued) and, past
  // backoffLimitCount, it ends RequeuingLimitExceeded instead (Kueue
  // deactivates it). Returns the job's next state; updates `reason` and
  // appends to `message`. Without the strategy: kQueued, at once.
  store::JobState ApplyRequeueBackoff(Job& job, std::string* reason, std::string* message);
  // Makes an admission pass run when the engine's earliest backoff ends.
  void ArmBackoffTimer();
  // The checkpoint the next attempt resumes from: an absolute path, or "".
  std::string ResumePoint(const Job& job) const;
  // Rebuilds the job's checkpoint index (digests off the loop when
  // JobManagerOptions::background is set), prunes it to checkpoint.keep and
  // stores it.
  void RefreshCheckpoints(Job& job);
  void ApplyCheckpointIndex(const std::string& id, std::string index_json, std::vector<std::string> deleted);
  // The record of a job about to be submitted, before the loop's checks
  // (state Queued; no seq, dependencies or secrets yet).
  static store::JobRecord NewJobRecord(const SubmitRequest& request, const PreparedJob& prepared);
  // Evidence (job_manager_evidence.cc). Writes the submit part for a job
  // being submitted (its code is unpacked) and sets rec.evidence_submit.
  Status RecordSubmitEvidence(Job& job, const SubmitRequest& request,
                              const std::vector<evidence::FileDigest>& code_files);
  // The submit part's text; reads no state of the loop, so it may run on
  // any thread. `client_json` as SubmitRequest::client_evidence_json.
  std::string SubmitEvidenceText(const store::JobRecord& rec, const spec::JobSpec& spec,
                                 const spec::StringPairs& secret_env, const std::string& client_json,
                                 const std::vector<evidence::FileDigest>& code_files) const;
  // {"git": ...} of the submit part of job `id`, as a reproduction records
  // it; "" when that job kept none.
  std::string GitEvidenceOf(const store::JobRecord& original) const;
  // Seals the capsule of an ended job: assembled (log digests, pip freeze)
  // off the loop, stored as a blob, its digest set in rec.evidence. When
  // the capsule cannot be written it is tried again (RetrySealing).
  void SealEvidence(Job& job);
  // Seals again the capsules whose write failed; armed by SealEvidence
  // after kStoreRetryDelay, once, and again while some still fail.
  void RetrySealing();
  void ArmSealRetry();
  bool seal_retry_armed_ = false;
  // GPUs (job_manager_gpus.cc).
  struct GpuSlot {
    gpu::GpuHealth health;
    bool drained = false;
    std::vector<int64_t> foreign_pids;  // processes on it while no job of ours has it
    std::optional<int64_t> stored_ecc;  // the ECC baseline as the database has it
  };
  // Whether GPU `g` can be given to a new attempt now.
  bool GpuUsable(size_t g) const;
  // Whether GPU `g` is of `gpu_class` ("any" matches every GPU).
  bool GpuOfClass(size_t g, const std::string& gpu_class) const;
  // How many GPUs of `gpu_class` could be given out now.
  int64_t UsableGpus(const std::string& gpu_class) const;
  // Whether GPU `g` could take work once free (healthy or suspect, not drained).
  bool GpuInService(size_t g) const;
  // Why a job needing `gpus` GPUs cannot fit the GPUs in service; "" when it can.
  std::string GpuShortage(int64_t gpus) const;
  void LoadGpuState();
  void ApplyGpuChange(size_t g, const std::optional<gpu::HealthChange>& change);
  // Stops the running attempts on GPU `g`: `reason` GpuFault (an
  // interruption, retried) or GpuXid (the job's own fault).
  void FaultJobsOnGpu(size_t g, const std::string& reason, const std::string& message);
  // Records the fault on a running or admitted job and stops its ranks;
  // false when the job is not running or is already stopping.
  bool FaultJob(Job& job, const std::string& reason, const std::string& message);
  void SaveGpu(size_t g);
  Status AppendGpuEvent(size_t g, std::string type, std::string reason, std::string message);
  // The GPU an operator names: its index ("0"), its UUID, or a prefix of
  // exactly one GPU's UUID. NotFound or InvalidArgument (ambiguous) say why.
  Result<size_t> FindGpu(const std::string& name) const;
  // Stores GPU `g`'s ECC baseline when it moved (a settings row per UUID).
  void SaveEccBaseline(size_t g);
  // The GPUs a new attempt of `job` gets (job_manager_gpus.cc): usable ones
  // of its class, Healthy before Suspect, then the coolest and least used.
  std::vector<int> ChooseGpus(const Job& job) const;
  // GPU `g`'s UUID (its index, when the machine's GPUs were not listed).
  std::string GpuUuid(size_t g) const;

  // Reads the job's metrics file from where it stopped (job_manager_progress.cc);
  // true when new lines came.
  bool FollowMetricsFile(Job& job);
  // Counts an event in options.metrics, when there is a registry.
  void Count(const std::string& name, const metrics::Labels& labels, double delta = 1);
  void ObserveSeconds(const std::string& name, const metrics::Labels& labels, int64_t ms);
  std::vector<int64_t> last_xid_;  // per GPU, for DCGM_FI_DEV_XID_ERRORS

  // Runs `work` off the control loop (JobManagerOptions::background) and
  // the continuation it returns back on the loop; both inline when no
  // background runner is set.
  void RunInBackground(std::function<std::function<void()>()> work);
  // Stores `data` as a content-addressed blob; returns "sha256:HEX".
  Result<std::string> WriteBlob(const std::string& data) const;
  void Publish();
  // Writes the failure of a store commit to the log; the job stays as it
  // was in memory and the daemon keeps running.
  void LogStoreFailure(const Job& job, const Status& st);
  // A small write (the settings row store_probe_at) that tells whether the
  // store commits: OnStoreWrite enters or leaves DiskFull by it.
  void ProbeStore();
  // Makes RetryStoreWrites run after kStoreRetryDelay, once.
  void ArmStoreRetry();
  bool store_retry_armed_ = false;
  // Recover found these attempts started (id -> attempt number) but could
  // not commit it; RetryStoreWrites commits them while they still run.
  std::map<std::string, int64_t> unrecorded_starts_;
  // Commits that attempt `n` of `job`, found after a restart, runs.
  Status CommitFoundStart(Job& job, int64_t n);
  // Ends of attempts whose commit failed (job id and attempt number -> the
  // event that tells it, with its time): the job shows the end, the
  // database does not have it yet. RetryStoreWrites commits them, then
  // seals the evidence; until then the job is kept in memory (not
  // Evictable), so it is never read back as still running.
  std::map<std::pair<std::string, int64_t>, store::EventRecord> unrecorded_ends_;
  // Commits the end of `job`'s attempt `number` as the job now stands: the
  // attempt's record, the job's record and `event`, in one transaction.
  Status CommitEnd(Job& job, int64_t number, const store::EventRecord& event);
  bool HasUnrecordedEnd(const std::string& id) const;
  // Follows every write of the store: a full disk (ResourceExhausted)
  // enters the DiskFull condition, logged once and published; the next
  // write that succeeds leaves it.
  void OnStoreWrite(const Status& st);
  // Publishes after the current task (JobManagerOptions::defer); without
  // defer, the next Publish shows the change.
  void PublishSoon();

  TauHome home_;
  store::JobStore* store_;
  Executor* executor_;
  const sched::AdmissionPolicy* policy_;
  const Clock* clock_;
  JobManagerOptions options_;
  StatePublisher* publisher_;

  std::map<int64_t, std::unique_ptr<Job>> jobs_by_seq_;
  std::unordered_map<std::string, Job*> jobs_by_id_;
  std::unordered_map<uint64_t, std::pair<Job*, int>> jobs_by_token_;  // token -> job, rank
  bool admission_scheduled_ = false;
  bool eviction_scheduled_ = false;
  // Reads ended jobs for the published views.
  std::shared_ptr<const JobHistory> history_;
  std::optional<int64_t> retry_timer_at_;  // when the armed retry timer fires (ms)
  std::optional<int64_t> backoff_timer_at_;  // when the armed requeue-backoff timer fires (ms)
  bool disk_full_ = false;        // the DiskFull condition (OnStoreWrite)
  int store_observer_ = 0;        // this manager's write observer on the store
  std::string store_message_;     // the failed commit that entered it
  // The embedded engine, when options_.admission names none.
  std::unique_ptr<Admission> own_admission_;
  Admission* admission_ = nullptr;
  std::vector<store::KueueObjectRecord> kueue_objects_;
  // Decodes stored objects into a configuration.
  static Result<sched::KueueConfig> DecodeObjects(const std::vector<store::KueueObjectRecord>& objects);
  Status LoadKueue();
  // The admission-fair-sharing history stored before a restart.
  void RestoreAdmissionFairSharing();
  int64_t next_seq_ = 1;
  uint64_t next_token_ = 1;
  int64_t version_ = 0;
  int64_t afs_saved_sample_ms_ = -1;  // the admission-fair-sharing sample last stored
  int64_t last_event_id_ = 0;
  sched::Resources used_;
  std::vector<bool> gpu_busy_;
  std::vector<GpuSlot> gpu_slots_;
  std::vector<int64_t> cpu_load_;  // milli-CPUs pinned to each of options_.cpu_ids
  std::mt19937_64 rng_{std::random_device{}()};  // backoff jitter
};

}  // namespace tau::server
