#include "server/job_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/digest.h"
#include "common/log.h"
#include "common/names.h"
#include "common/strings.h"
#include "evidence/redact.h"
#include "evidence/snapshot.h"
#include "exec/process_info.h"
#include "server/admission/embedded_admission.h"
#include "server/cancel_request.h"
#include "server/job_history.h"
#include "server/job_view.h"
#include "server/local_ray.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::server {
namespace fs = std::filesystem;
using store::AttemptRecord;
using store::AttemptState;
using store::JobState;

std::string JobManager::SetupFailedMarker(const std::string& id, int64_t attempt, int rank) const {
  return (home_.attempt_dir(id, attempt) / fmt::format("rank-{}.setup-failed", rank)).string();
}

std::string JobManager::RayTempDir(const std::string& id, int64_t attempt) {
  return fmt::format("/tmp/tau-ray-{}-{}", id, attempt);
}

Result<std::string> JobManager::RayPython() const {
  std::string path;
  for (const std::string& kv : options_.base_env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  return FindRayPython(options_.ray_program, path);
}

Result<spec::JobSpec> JobManager::DecodeSpec(const std::string& json) { return DecodeStoredSpec(json); }

sched::Resources JobManager::RequestOf(const spec::JobSpec& s) { return server::RequestOf(s); }

JobManager::JobManager(TauHome home, store::JobStore* store, Executor* executor,
                       const sched::AdmissionPolicy* policy, const Clock* clock,
                       JobManagerOptions options, StatePublisher* publisher)
    : home_(std::move(home)),
      store_(store),
      executor_(executor),
      policy_(policy),
      clock_(clock),
      options_(std::move(options)),
      publisher_(publisher),
      gpu_busy_(static_cast<size_t>(options_.capacity.gpus), false),
      cpu_load_(options_.cpu_ids.size(), 0) {
  history_ = std::make_shared<JobHistory>(home_.database().string(), home_, options_.max_interruptions);
  if (options_.admission) {
    admission_ = options_.admission;
  } else {
    own_admission_ = std::make_unique<EmbeddedAdmission>();
    admission_ = own_admission_.get();
  }
  admission_->Configure(options_.kueue);
  store_observer_ = store_->db()->AddWriteObserver([this](const Status& st) { OnStoreWrite(st); });
  gpu_slots_.reserve(gpu_busy_.size());
  last_xid_.assign(gpu_busy_.size(), 0);
  for (size_t g = 0; g < gpu_busy_.size(); ++g) {
    // Each model's own temperature lines where NVML reports them.
    gpu::HealthThresholds thresholds = options_.health_thresholds;
    if (g < options_.gpu_info.size()) thresholds = gpu::WithModelTemperatures(thresholds, options_.gpu_info[g]);
    gpu_slots_.push_back(GpuSlot{gpu::GpuHealth(thresholds), false, {}, std::nullopt});
    // GPUs nobody watches are taken as an operator listed them: healthy.
    if (!options_.gpu_health_monitored) gpu_slots_.back().health.OnSample(gpu::GpuSample{.readable = true});
  }
}

JobManager::~JobManager() { store_->db()->RemoveWriteObserver(store_observer_); }

int64_t JobManager::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_->Now().time_since_epoch()).count();
}

Result<JobManager::Job*> JobManager::Find(const std::string& id_or_name) {
  auto it = jobs_by_id_.find(id_or_name);
  if (it != jobs_by_id_.end()) return it->second;
  // The database knows every job: it decides which is the newest of a name.
  TAU_ASSIGN_OR_RETURN(std::string id, store_->ResolveJobId(id_or_name));
  if (id.empty()) return NotFoundError(fmt::format("no job with id or name \"{}\"", id_or_name));
  it = jobs_by_id_.find(id);
  if (it != jobs_by_id_.end()) return it->second;
  // An ended job the loop let go of: held again until it may go (see
  // EvictEnded), so callers can act on it like on any other.
  TAU_ASSIGN_OR_RETURN(std::optional<store::JobRecord> rec, store_->LoadJob(id));
  if (!rec) return NotFoundError(fmt::format("no job with id or name \"{}\"", id_or_name));
  TAU_ASSIGN_OR_RETURN(std::vector<AttemptRecord> attempts, store_->LoadAttemptsOf({id}));
  TAU_ASSIGN_OR_RETURN(std::unique_ptr<Job> job, JobFromRecord(std::move(*rec), std::move(attempts)));
  return Hold(std::move(job));
}

Result<std::unique_ptr<JobManager::Job>> JobManager::JobFromRecord(store::JobRecord rec,
                                                                  std::vector<AttemptRecord> attempts) {
  auto job = std::make_unique<Job>();
  auto spec = DecodeSpec(rec.spec_json);
  if (!spec.ok()) return spec.status().WithContext(fmt::format("job {}'s stored spec", rec.id));
  job->spec = std::move(*spec);
  job->request = RequestOf(job->spec);
  if (!rec.secret_env.empty()) {
    nlohmann::json secrets = nlohmann::json::parse(rec.secret_env, nullptr, false);
    if (secrets.is_object()) {
      for (auto it = secrets.begin(); it != secrets.end(); ++it) {
        if (it.value().is_string()) job->secret_env.emplace_back(it.key(), it.value().get<std::string>());
      }
    }
  }
  job->rec = std::move(rec);
  job->attempts = std::move(attempts);
  return job;
}

JobManager::Job* JobManager::Hold(std::unique_ptr<Job> job) {
  Job* raw = job.get();
  jobs_by_id_[raw->rec.id] = raw;
  jobs_by_seq_[raw->rec.seq] = std::move(job);
  if (store::IsTerminal(raw->rec.state)) ScheduleEviction();
  return raw;
}

Status JobManager::AppendEvent(Job& job, std::string type, std::string reason,
                               std::string message) {
  TAU_RETURN_IF_ERROR(WriteDeferred(job));  // its events in the order they happened
  TAU_ASSIGN_OR_RETURN(int64_t id, store_->AppendEvent({0, job.rec.id, NowMs(), std::move(type),
                                                        std::move(reason), std::move(message)}));
  last_event_id_ = id;
  return Status::Ok();
}

Status JobManager::SaveJob(Job& job) {
  job.view.reset();
  TAU_RETURN_IF_ERROR(WriteDeferred(job, /*record_follows=*/true));
  return store_->UpdateJob(job.rec);
}

Status JobManager::SaveAttempt(Job& job, const AttemptRecord& attempt) {
  job.view.reset();
  bool found = false;
  for (auto& a : job.attempts) {
    if (a.number == attempt.number) {
      a = attempt;
      found = true;
    }
  }
  if (!found) job.attempts.push_back(attempt);
  TAU_RETURN_IF_ERROR(WriteDeferred(job));
  return store_->UpsertAttempt(attempt);
}

void JobManager::LogStoreFailure(const Job& job, const Status& st) {
  log::Error("jobs", "could not commit a change to the database",
             {{"job", job.rec.id}, {"error", st.ToString()}});
}

void JobManager::OnStoreWrite(const Status& st) {
  if (!st.ok() && st.code() == StatusCode::kResourceExhausted) {
    store_message_ = st.message();
    if (!disk_full_) {
      disk_full_ = true;
      log::Error("store",
                 "DiskFull: the database cannot commit changes because its disk is full; submits and other changes "
                 "are refused until space is freed, running jobs keep running",
                 {{"error", st.message()}, {"database", home_.database().string()}});
      PublishSoon();
    }
    ArmStoreRetry();
    return;
  }
  if (st.ok() && disk_full_) {
    disk_full_ = false;
    store_message_.clear();
    log::Info("store", "the database commits changes again (DiskFull is over)");
    PublishSoon();
  }
}

void JobManager::ProbeStore() {
  // The write observer sees its outcome; the error itself is not the
  // caller's concern.
  (void)store_->SetSetting("store_probe_at", std::to_string(NowMs()));
}

void JobManager::ArmStoreRetry() {
  if (store_retry_armed_ || !options_.after) return;
  store_retry_armed_ = true;
  options_.after(kStoreRetryDelay, [this] {
    store_retry_armed_ = false;
    RetryStoreWrites();
  });
}

void JobManager::RetryStoreWrites() {
  for (auto it = unrecorded_starts_.begin(); it != unrecorded_starts_.end();) {
    auto job = jobs_by_id_.find(it->first);
    // Gone, or moved on: a later commit of the job has recorded its state.
    if (job == jobs_by_id_.end() || job->second->rec.attempt != it->second ||
        job->second->rec.state != JobState::kRunning) {
      it = unrecorded_starts_.erase(it);
      continue;
    }
    if (!CommitFoundStart(*job->second, it->second).ok()) break;  // still full: all wait
    it = unrecorded_starts_.erase(it);
  }
  // Ends in the order they happened (by attempt within a job).
  std::vector<std::pair<std::pair<std::string, int64_t>, store::EventRecord>> ends(unrecorded_ends_.begin(),
                                                                                   unrecorded_ends_.end());
  std::stable_sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.second.at < b.second.at; });
  for (const auto& [key, event] : ends) {
    auto job = jobs_by_id_.find(key.first);
    if (job == jobs_by_id_.end()) {
      unrecorded_ends_.erase(key);
      continue;
    }
    if (!CommitEnd(*job->second, key.second, event).ok()) break;  // still full: all wait
    unrecorded_ends_.erase(key);
    job->second->view.reset();  // no longer end_unrecorded
    if (!HasUnrecordedEnd(key.first)) SealEvidence(*job->second);
  }
  if (disk_full_) ProbeStore();
  if (disk_full_ || !unrecorded_starts_.empty() || !unrecorded_ends_.empty()) ArmStoreRetry();
  Publish();
}

void JobManager::PublishSoon() {
  // Not now: the write may be one step of a change still being made.
  if (options_.defer) options_.defer([this] { Publish(); });
}

// ---- submit, cancel, remove -------------------------------------------

Result<PreparedJob> JobManager::PrepareSubmit(const SubmitRequest& req) const {
  PreparedJob prepared;
  TAU_ASSIGN_OR_RETURN(prepared.spec, DecodeSpec(req.spec_json));
  if (!TauHome::IsBlobDigest(req.snapshot_digest)) {
    return InvalidArgumentError(fmt::format("the snapshot is named by sha256: and 64 hex digits, not \"{}\"",
                                            ShortenUtf8(req.snapshot_digest, 80)));
  }
  std::error_code ec;
  fs::path blob = home_.blob(req.snapshot_digest);
  if (!fs::exists(blob, ec)) {
    return FailedPreconditionError(fmt::format("snapshot {} has not been uploaded (PUT it to /api/v1/blobs/{})",
                                               req.snapshot_digest, req.snapshot_digest));
  }
  if (options_.max_snapshot_bytes > 0) {
    const auto size = static_cast<int64_t>(fs::file_size(blob, ec));
    if (!ec && size > options_.max_snapshot_bytes) {
      return InvalidArgumentError(fmt::format("the code snapshot is {} bytes, over the limit of {} bytes{}", size,
                                              options_.max_snapshot_bytes, options_.max_snapshot_why));
    }
  }
  // Unique among the folders; Submit checks it against the jobs too.
  do {
    prepared.id = NewJobId();
  } while (fs::exists(home_.job_dir(prepared.id), ec));
  // Files first: a failure here (disk full) leaves the database untouched.
  std::ifstream in(blob, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Status st = evidence::UnpackSnapshot(data, home_.code_dir(prepared.id), &prepared.code_files);
  if (options_.on_snapshot_unpacked) options_.on_snapshot_unpacked();
  for (const fs::path& d : {home_.checkpoint_dir(prepared.id), home_.output_dir(prepared.id)}) {
    if (st.ok() && !fs::create_directories(d, ec) && ec) st = ErrnoError(ec.value(), d.string());
  }
  // Room for a cancel the database cannot record later (a full disk).
  if (st.ok()) st = ReserveCancelRequest(home_, prepared.id);
  if (!st.ok()) {
    DiscardPrepared(prepared);
    return st.WithContext("preparing the job's folder");
  }
  prepared.spec_json = spec::JobSpecToJson(prepared.spec);
  prepared.spec_sha256 = Sha256Hex(prepared.spec_json);
  prepared.created_at = NowMs();
  // The submit part of the evidence, fsynced here rather than on the loop.
  // A reproduction named by the request is resolved on the loop, and its
  // original's git state read there, unless the request carries both.
  if (req.reproduces.empty() || !req.client_evidence_json.empty()) {
    const store::JobRecord rec = NewJobRecord(req, prepared);
    auto digest = WriteBlob(SubmitEvidenceText(rec, prepared.spec, req.secret_env, req.client_evidence_json,
                                               prepared.code_files));
    if (!digest.ok()) {
      DiscardPrepared(prepared);
      return digest.status().WithContext("recording the job's evidence").WithContext("preparing the job's folder");
    }
    prepared.evidence_submit = *digest;
  }
  return prepared;
}

void JobManager::DiscardPrepared(const PreparedJob& prepared) const {
  if (prepared.id.empty()) return;
  std::error_code ec;
  fs::remove_all(home_.job_dir(prepared.id), ec);
  fs::remove_all(home_.shim_dir(prepared.id), ec);
  // It names the job (its id): no other job shares it.
  if (!prepared.evidence_submit.empty()) fs::remove(home_.blob(prepared.evidence_submit), ec);
}

store::JobRecord JobManager::NewJobRecord(const SubmitRequest& req, const PreparedJob& prepared) {
  const spec::JobSpec& spec = prepared.spec;
  store::JobRecord rec;
  rec.id = prepared.id;
  rec.name = spec.name;
  rec.workspace = spec.workspace;
  rec.queue = spec.queue;
  rec.state = JobState::kQueued;
  rec.spec_json = prepared.spec_json.empty() ? spec::JobSpecToJson(spec) : prepared.spec_json;
  rec.spec_sha256 = prepared.spec_sha256.empty() ? Sha256Hex(rec.spec_json) : prepared.spec_sha256;
  rec.snapshot_digest = req.snapshot_digest;
  // Recorded as the environment is: secret values never reach the store.
  rec.submit_command = evidence::RedactCommandLine(req.submit_command);
  rec.reproduces = req.reproduces;
  rec.created_at = prepared.created_at;
  return rec;
}

Result<std::shared_ptr<const JobView>> JobManager::Submit(const SubmitRequest& req) {
  TAU_ASSIGN_OR_RETURN(PreparedJob prepared, PrepareSubmit(req));
  return Submit(req, prepared);
}

Result<std::shared_ptr<const JobView>> JobManager::Submit(const SubmitRequest& req, const PreparedJob& prepared) {
  auto result = SubmitPrepared(req, prepared);
  // Refused, or a repeated request_id answered with the job it made first.
  if (!result.ok() || (*result)->job.id != prepared.id) DiscardPrepared(prepared);
  return result;
}

Result<std::shared_ptr<const JobView>> JobManager::FindRepeatedSubmit(const SubmitRequest& req) {
  if (req.request_id.empty()) return std::shared_ptr<const JobView>();
  TAU_RETURN_IF_ERROR(CheckRequestId(req.request_id));
  // Most ids are new: one indexed lookup, and the spec is decoded (on the
  // loop, which owns the store) only for an id seen before.
  TAU_ASSIGN_OR_RETURN(auto seen, store_->FindSubmitRequest(req.request_id));
  if (!seen) return std::shared_ptr<const JobView>();
  TAU_ASSIGN_OR_RETURN(spec::JobSpec spec, DecodeSpec(req.spec_json));
  return FindRepeatedSubmit(req, Sha256Hex(spec::JobSpecToJson(spec)));  // as NewJobRecord has it
}

Result<std::shared_ptr<const JobView>> JobManager::FindRepeatedSubmit(const SubmitRequest& req,
                                                                      const std::string& spec_sha256) {
  if (req.request_id.empty()) return std::shared_ptr<const JobView>();
  TAU_RETURN_IF_ERROR(CheckRequestId(req.request_id));
  TAU_ASSIGN_OR_RETURN(auto seen, store_->FindSubmitRequest(req.request_id));
  if (!seen) return std::shared_ptr<const JobView>();
  if (seen->spec_sha256 != spec_sha256) {
    return InvalidArgumentError(fmt::format("request_id \"{}\" was already used to submit another spec (job {}); "
                                            "each submit needs a new request_id",
                                            req.request_id, seen->job_id));
  }
  auto job = Find(seen->job_id);
  if (!job.ok()) {
    return AlreadyExistsError(fmt::format("request_id \"{}\" already submitted job {}, which has been removed",
                                          req.request_id, seen->job_id));
  }
  if ((*job)->rec.snapshot_digest != req.snapshot_digest) {
    return InvalidArgumentError(fmt::format("request_id \"{}\" was already used to submit the same spec with "
                                            "another code snapshot (job {}); each submit needs a new request_id",
                                            req.request_id, seen->job_id));
  }
  if (!(*job)->view) Publish();
  return (*job)->view;
}

Result<std::shared_ptr<const JobView>> JobManager::SubmitPrepared(const SubmitRequest& req, const PreparedJob& prepared) {
  const spec::JobSpec& spec = prepared.spec;
  store::JobRecord rec = NewJobRecord(req, prepared);
  // A repeat is answered with its job even on a full disk: it writes nothing.
  TAU_ASSIGN_OR_RETURN(auto repeated, FindRepeatedSubmit(req, rec.spec_sha256));
  if (repeated) return repeated;
  // On a disk known to be full, a probe tells whether space came back
  // before anything is checked or written.
  if (disk_full_) ProbeStore();
  if (disk_full_) {
    return ResourceExhaustedError(fmt::format(
        "the disk of the database {} is full ({}); submits are refused until space is freed",
        home_.database().string(), store_message_));
  }
  if (jobs_by_id_.count(prepared.id)) return AbortedError(fmt::format("job id {} is taken; submit again", prepared.id));
  if (spec.run.workload_kind == spec::WorkloadKind::kRayJob && options_.runs_locally) {
    TAU_RETURN_IF_ERROR(RayPython().status());
  }
  if (spec.compute.gpus > 0 && spec.compute.gpu_class != "any" && !options_.gpu_info.empty()) {
    std::vector<std::string> classes;
    bool found = false;
    for (const auto& g : options_.gpu_info) {
      found = found || g.gpu_class == spec.compute.gpu_class;
      if (std::find(classes.begin(), classes.end(), g.gpu_class) == classes.end()) classes.push_back(g.gpu_class);
    }
    if (!found) {
      return FailedPreconditionError(fmt::format("compute.gpu_class \"{}\": this machine has no such GPU; its GPUs are {}",
                                                 spec.compute.gpu_class, Join(classes, ", ")));
    }
  }
  sched::Resources request = RequestOf(spec);
  if (options_.runs_locally) TAU_RETURN_IF_ERROR(policy_->CheckFeasible(request, options_.capacity));
  {
    Job probe;
    probe.spec = spec;
    probe.rec.id = "j_probe";
    probe.rec.workspace = spec.workspace;
    probe.rec.queue = spec.queue;
    TAU_ASSIGN_OR_RETURN(sched::Workload w, ToWorkload(probe));
    TAU_RETURN_IF_ERROR(admission_->CheckFeasible(w));
  }
  // depends_on: names mean the newest job of that name now.
  std::vector<std::string> dependency_ids;
  for (const std::string& dep : spec.depends_on) {
    auto found = Find(dep);
    if (!found.ok()) return NotFoundError(fmt::format("depends_on: no job with id or name \"{}\"", dep));
    dependency_ids.push_back((*found)->rec.id);
  }

  std::string reproduces;
  if (!req.reproduces.empty()) {
    auto original = Find(req.reproduces);
    if (!original.ok()) return NotFoundError(fmt::format("reproduces: no job with id or name \"{}\"", req.reproduces));
    reproduces = (*original)->rec.id;
  }

  auto job = std::make_unique<Job>();
  job->rec = std::move(rec);
  job->rec.seq = next_seq_;
  job->rec.depends_on = Join(dependency_ids, ",");
  job->rec.reproduces = reproduces;
  if (!req.secret_env.empty()) {
    nlohmann::json secrets = nlohmann::json::object();
    for (const auto& [k, v] : req.secret_env) {
      if (!CheckEnvVarName(k).ok() || spec::IsReservedEnvName(k)) {
        return InvalidArgumentError(fmt::format("secret_env: \"{}\" cannot be set", k));
      }
      secrets[k] = v;
    }
    job->rec.secret_env = secrets.dump();
    job->secret_env = req.secret_env;
  }
  if (!job->rec.created_at) job->rec.created_at = NowMs();
  job->spec = spec;
  job->request = request;

  if (!prepared.evidence_submit.empty() && reproduces == req.reproduces) {
    job->rec.evidence_submit = prepared.evidence_submit;  // written off the loop
  } else {
    TAU_RETURN_IF_ERROR(RecordSubmitEvidence(*job, req, prepared.code_files)
                            .WithContext("recording the job's evidence")
                            .WithContext("preparing the job's folder"));
    if (!prepared.evidence_submit.empty() && prepared.evidence_submit != job->rec.evidence_submit) {
      std::error_code ec;
      fs::remove(home_.blob(prepared.evidence_submit), ec);  // written for a reproduction resolved otherwise
    }
  }
  {
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = store_->InsertJob(job->rec);
    if (st.ok() && !req.request_id.empty()) {
      st = store_->InsertSubmitRequest({req.request_id, job->rec.id, job->rec.spec_sha256, job->rec.created_at});
    }
    if (st.ok()) st = AppendEvent(*job, "Submitted", "", fmt::format("queued in {}/{}", job->rec.workspace, job->rec.queue));
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) return st.WithContext("saving the job");
  }
  ++next_seq_;
  Count("taugrid_job_submissions_total", {{"workspace", job->rec.workspace}, {"queue", job->rec.queue}});
  Job* raw = job.get();
  jobs_by_id_[raw->rec.id] = raw;
  jobs_by_seq_[raw->rec.seq] = std::move(job);
  Publish();
  ScheduleAdmission();
  return raw->view;
}

Result<std::shared_ptr<const JobView>> JobManager::Cancel(const std::string& id_or_name) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  if (store::IsTerminal(job->rec.state)) {
    return FailedPreconditionError(fmt::format("job {} has already ended ({})", job->rec.id,
                                               store::JobStateName(job->rec.state)));
  }
  if (job->rec.state == JobState::kQueued || job->rec.state == JobState::kRetrying) {
    job->rec.message = job->rec.state == JobState::kQueued ? "cancelled before it started"
                                                           : "cancelled while waiting to retry";
    const store::JobRecord before = job->rec;
    job->rec.state = JobState::kCancelled;
    job->rec.reason = "Cancelled";
    job->rec.retry_at.reset();
    job->rec.finished_at = NowMs();
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(*job);
    if (st.ok()) st = AppendEvent(*job, "Cancelled", "Cancelled", job->rec.message);
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) {
      job->rec = before;  // as the database still says
      job->view.reset();
      Publish();
      return Status(st.code(), fmt::format("the cancel of job {} could not be recorded, so it was refused and the job "
                                           "stays {}: {}",
                                           job->rec.id, store::JobStateName(job->rec.state), st.message()));
    }
    admission_->Withdraw(job->rec.id);
    executor_->Discard(job->rec.id);  // what was prepared for its next attempt
    SealEvidence(*job);
    ScheduleAdmission();  // jobs that depend on it fail now
  } else if (!job->rec.cancel_requested) {
    job->rec.cancel_requested = true;
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(*job);
    if (st.ok()) {
      st = AppendEvent(*job, "CancelRequested", "Cancelled",
                       fmt::format("SIGTERM sent; SIGKILL after {}", FormatDuration(job->spec.checkpoint.grace_period)));
    }
    if (st.ok()) st = txn->Commit();
    // The job is stopped even when the request cannot be recorded: a
    // cancel must work on a full disk. It ends Cancelled in memory; the
    // database catches up when its end is committed. Until then the
    // request is kept on disk (cancel_request.h: rewritten in place, so a full
    // disk takes it), which a daemon restarted meanwhile honours.
    Status kept = st.ok() ? Status::Ok() : KeepCancelRequest(home_, job->rec.id, job->rec.attempt);
    StopRanks(*job);
    // A rank whose shim is gone, its leftovers not killed yet because
    // their loss could not be recorded, is swept at once, not when the
    // retry timer comes (sweeping is idempotent; that timer stays armed).
    const bool draining =
        std::any_of(job->ranks.begin(), job->ranks.end(), [](const Job::Rank& r) { return r.draining; });
    if (draining && options_.after) options_.after(std::chrono::milliseconds(0), [this] { SweepLostRanks(); });
    if (!st.ok()) {
      Publish();
      const std::string grace = FormatDuration(job->spec.checkpoint.grace_period);
      if (kept.ok()) {
        return Status(st.code(), fmt::format("the cancel of job {} could not be recorded in the database ({}); SIGTERM "
                                             "was sent to the job anyway (SIGKILL after {}), and the cancel is kept on "
                                             "disk, so the job ends Cancelled even if the daemon restarts "
                                             "before the database records it",
                                             job->rec.id, st.message(), grace));
      }
      return Status(st.code(), fmt::format("the cancel of job {} could not be recorded, so it is refused; SIGTERM was "
                                           "sent to the job anyway (SIGKILL after {}), but a daemon restarted before "
                                           "the disk has room will not know of the cancel ({}; {})",
                                           job->rec.id, grace, st.message(), kept.message()));
    }
  }
  Publish();
  return job->view;
}

// ---- publication --------------------------------------------------------

void JobManager::Publish() {
  auto view = std::make_shared<StateView>();
  view->version = ++version_;
  if (disk_full_) {
    view->store_condition = "DiskFull";
    view->store_message = store_message_;
  }
  view->last_event_id = last_event_id_;
  view->history = history_;
  view->jobs.reserve(jobs_by_seq_.size());
  bool evictable = false;
  for (auto& [seq, job] : jobs_by_seq_) {
    if (!job->view) {
      auto jv = NewJobView(job->rec, job->attempts, job->spec, home_, options_.max_interruptions);
      if (job->progress && (job->progress->snapshot().lines > 0 || job->progress->snapshot().bad_lines > 0)) {
        jv->progress = job->progress->snapshot();
      }
      jv->progress_stalled = job->progress_stalled;
      jv->evidence_error = job->evidence_error;
      jv->end_unrecorded = HasUnrecordedEnd(job->rec.id);
      jv->secret_env_names.clear();
      for (const auto& [k, v] : job->secret_env) jv->secret_env_names.push_back(k);
      job->view = std::move(jv);
    }
    view->by_id.emplace(job->rec.id, view->jobs.size());
    view->jobs.push_back(job->view);
    evictable = evictable || Evictable(*job);
  }
  publisher_->Publish(std::move(view));
  if (evictable) ScheduleEviction();
}

}  // namespace tau::server
