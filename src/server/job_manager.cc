#include "server/job_manager.h"
#include "server/pip_env.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/names.h"
#include "common/strings.h"
#include "evidence/snapshot.h"
#include "exec/process_info.h"
#include "spec/command.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::server {
namespace fs = std::filesystem;
using store::AttemptRecord;
using store::AttemptState;
using store::JobState;

namespace {

// A TCP port on 127.0.0.1 nobody listens on now (for torchrun's rendezvous).
int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

}  // namespace

std::string JobManager::SetupFailedMarker(const std::string& id, int64_t attempt, int rank) const {
  return (home_.attempt_dir(id, attempt) / fmt::format("rank-{}.setup-failed", rank)).string();
}

Result<spec::JobSpec> JobManager::DecodeSpec(const std::string& json) {
  spec::Diagnostics diags;
  spec::LoadOptions options;
  options.check_files = false;
  auto loaded = spec::LoadJobSpecText(json, "spec", "/", options, &diags);
  if (!loaded.ok()) {
    return InvalidArgumentError(fmt::format("the spec is not valid:\n{}", diags.Format()));
  }
  return loaded->spec;
}

sched::Resources JobManager::RequestOf(const spec::JobSpec& s) {
  const int64_t w = s.compute.workers;
  return {s.compute.cpus.milli() * w, s.compute.memory.milli() / 1000 * w, s.compute.gpus * w};
}

JobManager::JobManager(TauHome home, store::JobStore* store, AttemptRunner* runner,
                       const sched::AdmissionPolicy* policy, const Clock* clock,
                       JobManagerOptions options, StatePublisher* publisher)
    : home_(std::move(home)),
      store_(store),
      runner_(runner),
      policy_(policy),
      clock_(clock),
      options_(std::move(options)),
      publisher_(publisher),
      gpu_busy_(static_cast<size_t>(options_.capacity.gpus), false),
      cpu_load_(options_.cpu_ids.size(), 0) {
  engine_.Configure(options_.kueue);
  gpu_slots_.reserve(gpu_busy_.size());
  last_xid_.assign(gpu_busy_.size(), 0);
  for (size_t g = 0; g < gpu_busy_.size(); ++g) {
    gpu_slots_.push_back(GpuSlot{gpu::GpuHealth(options_.health_thresholds), false, {}});
    // GPUs nobody watches are taken as an operator listed them: healthy.
    if (!options_.gpu_health_monitored) gpu_slots_.back().health.OnSample(gpu::GpuSample{.readable = true});
  }
}

int64_t JobManager::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_->Now().time_since_epoch()).count();
}

Result<JobManager::Job*> JobManager::Find(const std::string& id_or_name) {
  auto it = jobs_by_id_.find(id_or_name);
  if (it != jobs_by_id_.end()) return it->second;
  for (auto rit = jobs_by_seq_.rbegin(); rit != jobs_by_seq_.rend(); ++rit) {
    if (rit->second->rec.name == id_or_name) return rit->second.get();
  }
  return NotFoundError(fmt::format("no job with id or name \"{}\"", id_or_name));
}

Status JobManager::AppendEvent(const Job& job, std::string type, std::string reason,
                               std::string message) {
  TAU_ASSIGN_OR_RETURN(int64_t id, store_->AppendEvent({0, job.rec.id, NowMs(), std::move(type),
                                                        std::move(reason), std::move(message)}));
  last_event_id_ = id;
  return Status::Ok();
}

Status JobManager::SaveJob(Job& job) {
  job.view.reset();
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
  return store_->UpsertAttempt(attempt);
}

void JobManager::LogStoreFailure(const Job& job, const Status& st) {
  log::Error("jobs", "could not commit a change to the database",
             {{"job", job.rec.id}, {"error", st.ToString()}});
}

// ---- submit, cancel, remove -------------------------------------------

Result<std::shared_ptr<const JobView>> JobManager::Submit(const SubmitRequest& req) {
  TAU_ASSIGN_OR_RETURN(spec::JobSpec spec, DecodeSpec(req.spec_json));
  if (spec.run.workload_kind == spec::WorkloadKind::kRayJob) {
    return FailedPreconditionError(
        "workload_kind rayjob needs the Kubernetes backend or local Ray support, which this "
        "taugridd does not have yet; run it as workload_kind job, or render it with `tau render` "
        "for a cluster with KubeRay");
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
  TAU_RETURN_IF_ERROR(policy_->CheckFeasible(request, options_.capacity));
  {
    Job probe;
    probe.spec = spec;
    probe.rec.id = "j_probe";
    probe.rec.workspace = spec.workspace;
    probe.rec.queue = spec.queue;
    TAU_ASSIGN_OR_RETURN(sched::Workload w, ToWorkload(probe));
    TAU_RETURN_IF_ERROR(engine_.CheckFeasible(w));
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

  std::error_code ec;
  fs::path blob = home_.blob(req.snapshot_digest);
  if (!fs::exists(blob, ec)) {
    return FailedPreconditionError(fmt::format("snapshot {} has not been uploaded", req.snapshot_digest));
  }

  auto job = std::make_unique<Job>();
  do {
    job->rec.id = NewJobId();
  } while (jobs_by_id_.count(job->rec.id));
  job->rec.seq = next_seq_;
  job->rec.name = spec.name;
  job->rec.workspace = spec.workspace;
  job->rec.queue = spec.queue;
  job->rec.state = JobState::kQueued;
  job->rec.spec_json = spec::JobSpecToJson(spec);
  job->rec.spec_sha256 = spec::JobSpecSha256(spec);
  job->rec.snapshot_digest = req.snapshot_digest;
  job->rec.submit_command = req.submit_command;
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
  job->rec.created_at = NowMs();
  job->spec = std::move(spec);
  job->request = request;

  // Files first: a failure here (disk full) leaves the database untouched.
  fs::path dir = home_.job_dir(job->rec.id);
  auto cleanup = [&] { fs::remove_all(dir, ec); };
  {
    std::ifstream in(blob, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Status st = evidence::UnpackSnapshot(data, home_.code_dir(job->rec.id));
    for (const fs::path& d : {home_.checkpoint_dir(job->rec.id), home_.output_dir(job->rec.id)}) {
      if (st.ok() && !fs::create_directories(d, ec) && ec) st = ErrnoError(ec.value(), d.string());
    }
    if (st.ok()) st = RecordSubmitEvidence(*job, req).WithContext("recording the job's evidence");
    if (!st.ok()) {
      cleanup();
      return st.WithContext("preparing the job's folder");
    }
  }
  {
    TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
    Status st = store_->InsertJob(job->rec);
    if (st.ok()) st = AppendEvent(*job, "Submitted", "", fmt::format("queued in {}/{}", job->rec.workspace, job->rec.queue));
    if (st.ok()) st = txn.Commit();
    if (!st.ok()) {
      cleanup();
      return st.WithContext("saving the job");
    }
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
    job->rec.state = JobState::kCancelled;
    job->rec.reason = "Cancelled";
    job->rec.retry_at.reset();
    job->rec.finished_at = NowMs();
    TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
    TAU_RETURN_IF_ERROR(SaveJob(*job));
    TAU_RETURN_IF_ERROR(AppendEvent(*job, "Cancelled", "Cancelled", job->rec.message));
    TAU_RETURN_IF_ERROR(txn.Commit());
    engine_.Remove(job->rec.id);
    SealEvidence(*job);
    ScheduleAdmission();  // jobs that depend on it fail now
  } else if (!job->rec.cancel_requested) {
    job->rec.cancel_requested = true;
    {
      TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
      TAU_RETURN_IF_ERROR(SaveJob(*job));
      TAU_RETURN_IF_ERROR(AppendEvent(
          *job, "CancelRequested", "Cancelled",
          fmt::format("SIGTERM sent; SIGKILL after {}", FormatDuration(job->spec.checkpoint.grace_period))));
      TAU_RETURN_IF_ERROR(txn.Commit());
    }
    StopRanks(*job);
  }
  Publish();
  return job->view;
}

Status JobManager::Remove(const std::string& id_or_name) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  if (!store::IsTerminal(job->rec.state)) {
    return FailedPreconditionError(fmt::format(
        "job {} is {}; cancel it first (tau cancel {})", job->rec.id,
        store::JobStateName(job->rec.state), job->rec.id));
  }
  TAU_RETURN_IF_ERROR(store_->DeleteJob(job->rec.id));
  std::error_code ec;
  fs::remove_all(home_.job_dir(job->rec.id), ec);
  jobs_by_id_.erase(job->rec.id);
  jobs_by_seq_.erase(job->rec.seq);
  Publish();
  ScheduleAdmission();  // queued jobs that depended on it fail now
  return Status::Ok();
}

Result<std::vector<std::string>> JobManager::Prune(std::chrono::milliseconds age) {
  int64_t cutoff = NowMs() - age.count();
  std::vector<std::string> ids;
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (store::IsTerminal(job->rec.state) && job->rec.finished_at.value_or(0) < cutoff) {
      ids.push_back(job->rec.id);
    }
  }
  for (const std::string& id : ids) TAU_RETURN_IF_ERROR(Remove(id));
  return ids;
}

// What rank `rank` of attempt `attempt` runs. A gang (workers > 1) or a
// torchrun job gets the rendezvous contract: MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE, NODE_RANK and TAU_WORKER_INDEX (the worker's index), and for
// one process per worker (launcher command) also RANK, LOCAL_RANK and
// LOCAL_WORLD_SIZE; torchrun sets those for the processes it starts.
AttemptStart JobManager::BuildAttemptStart(const Job& job, int64_t attempt, int rank, int port) const {
  const std::string& id = job.rec.id;
  const spec::JobSpec& spec = job.spec;
  const int64_t workers = spec.compute.workers;
  const bool torchrun = spec.run.launcher == spec::Launcher::kTorchrun;
  AttemptStart s;
  spec::Rendezvous rendezvous{std::to_string(workers), std::to_string(rank), "127.0.0.1", std::to_string(port)};
  s.argv = spec::BuildWorkerCommand(spec, rendezvous);
  if (!spec.runtime.pip.empty()) {
    PipSetup pip{(home_.attempt_dir(id, attempt) / "requirements.txt").string(), (home_.root() / "venvs").string(),
                 SetupFailedMarker(id, attempt, rank)};
    s.argv = WrapWithPipSetup(pip, s.argv);
  }
  s.env = options_.base_env;
  std::vector<std::string> gpus;
  const size_t per_rank = static_cast<size_t>(spec.compute.gpus);
  for (size_t i = static_cast<size_t>(rank) * per_rank;
       i < static_cast<size_t>(rank + 1) * per_rank && i < job.gpu_indexes.size(); ++i) {
    size_t g = static_cast<size_t>(job.gpu_indexes[i]);
    gpus.push_back(GpuUuid(g));
  }
  std::vector<std::pair<std::string, std::string>> vars = {
      {"TAU_JOB_ID", id},
      {"TAU_JOB_NAME", job.rec.name},
      {"TAU_ATTEMPT", std::to_string(attempt)},
      {"TAU_WORKSPACE", job.rec.workspace},
      {"TAU_WORKER_INDEX", std::to_string(rank)},
      {"TAU_CHECKPOINT_DIR", home_.checkpoint_dir(id).string()},
      {"TAU_OUTPUT_DIR", home_.output_dir(id).string()},
      {"TAU_METRICS_FILE", home_.metrics_file(id).string()},
      {"CUDA_VISIBLE_DEVICES", Join(gpus, ",")},
      {"PYTHONUNBUFFERED", "1"},
  };
  if (workers > 1 || torchrun) {
    const int64_t world = torchrun ? workers * spec.compute.processes_per_worker : workers;
    vars.insert(vars.end(), {{"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", std::to_string(port)},
                             {"WORLD_SIZE", std::to_string(world)},
                             {"NODE_RANK", std::to_string(rank)}});
    if (!torchrun) {
      vars.insert(vars.end(), {{"RANK", std::to_string(rank)}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}});
    }
  }
  if (!job.rec.retry_reason.empty()) vars.emplace_back("TAU_RETRY_REASON", job.rec.retry_reason);
  if (!job.resumed_from.empty()) vars.emplace_back("TAU_RESUME_FROM", job.resumed_from);
  for (const auto& [k, v] : vars) s.env.push_back(k + "=" + v);
  for (const auto& [k, v] : spec.runtime.env) s.env.push_back(k + "=" + v);
  for (const auto& [k, v] : job.secret_env) s.env.push_back(k + "=" + v);
  s.cwd = home_.code_dir(id).string();
  s.log_path = home_.log_file(id, attempt, rank).string();
  s.status_path = home_.status_file(id, attempt, rank).string();
  s.lock_path = home_.attempt_lock(id, attempt, rank).string();
  s.grace_ms = spec.checkpoint.grace_period.count();
  if (spec.limits.max_runtime) s.deadline_ms = spec.limits.max_runtime->count();
  return s;
}

void JobManager::StartAttempt(Job& job) {
  const int64_t number = job.rec.attempt + 1;
  // Take the job's resources and GPUs.
  job.gpu_indexes.clear();
  for (size_t g = 0; g < gpu_busy_.size() && static_cast<int64_t>(job.gpu_indexes.size()) < job.request.gpus; ++g) {
    if (GpuUsable(g) && GpuOfClass(g, job.spec.compute.gpu_class)) job.gpu_indexes.push_back(static_cast<int>(g));
  }
  for (int g : job.gpu_indexes) gpu_busy_[static_cast<size_t>(g)] = true;
  used_ += job.request;
  job.holds_resources = true;

  std::error_code ec;
  fs::create_directories(home_.attempt_dir(job.rec.id, number), ec);
  AttemptRecord attempt;
  attempt.job_id = job.rec.id;
  attempt.number = number;
  attempt.state = AttemptState::kStarting;
  std::vector<std::string> gpus;
  for (int g : job.gpu_indexes) gpus.push_back(std::to_string(g));
  attempt.gpus = Join(gpus, ",");
  job.resumed_from = ResumePoint(job);
  attempt.retry_reason = job.rec.retry_reason;
  attempt.resumed_from = job.resumed_from;
  const std::string chosen_checkpoint = job.rec.resume_from;
  job.rec.resume_from.clear();  // used by this attempt only
  job.rec.state = JobState::kAdmitted;
  job.rec.attempt = number;
  const int64_t admitted_ms = NowMs();
  if (!job.rec.admitted_at) {
    ObserveSeconds("taugrid_admission_wait_seconds", {{"queue", job.rec.queue}}, admitted_ms - job.rec.created_at);
  }
  job.rec.admitted_at = job.rec.admitted_at.value_or(admitted_ms);
  // Commit "admitted, attempt N starting" before any process exists.
  {
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(job);
    if (st.ok()) st = SaveAttempt(job, attempt);
    if (st.ok()) {
      st = AppendEvent(job, "Admitted", "",
                       job.resumed_from.empty()
                           ? fmt::format("attempt {}", number)
                           : fmt::format("attempt {}, resuming from {}", number, job.resumed_from));
    }
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) {
      // The database still says Queued; so does memory again.
      LogStoreFailure(job, st);
      Release(job);
      job.rec.state = JobState::kQueued;
      job.rec.attempt = number - 1;
      job.rec.resume_from = chosen_checkpoint;
      job.attempts.erase(std::remove_if(job.attempts.begin(), job.attempts.end(),
                                        [&](const AttemptRecord& a) { return a.number == number; }),
                         job.attempts.end());
      return;
    }
  }
  if (ec) {
    FinishAttempt(job, ErrnoError(ec.value(), "create the attempt's folder"));
    return;
  }
  if (!job.spec.runtime.pip.empty()) {
    std::ofstream reqs(home_.attempt_dir(job.rec.id, number) / "requirements.txt");
    for (const std::string& r : job.spec.runtime.pip) reqs << r << "\n";
  }
  // All ranks or none: if one cannot start, the started ones are stopped
  // and the attempt fails with that error once they are gone.
  const int workers = static_cast<int>(job.spec.compute.workers);
  const int port = FreeLoopbackPort();
  job.ranks.assign(static_cast<size_t>(workers), Job::Rank{});
  job.first_failure.reset();
  job.peak_rss_kb = 0;
  std::vector<int64_t> pids;
  for (int r = 0; r < workers; ++r) {
    AttemptStart start = BuildAttemptStart(job, number, r, port);
    Result<exec::ShimProcess> shim = InternalError("not started");
    if (options_.cgroups) {
      std::string name = fmt::format("{}-{}-{}", job.rec.id, number, r);
      job.ranks[static_cast<size_t>(r)].cgroup = name;
      auto leaf = options_.cgroups->CreateLeaf(
          name, {job.spec.compute.cpus.milli(), job.spec.compute.memory.milli() / 1000, exec::CgroupLimits{}.pids});
      if (leaf.ok()) start.cgroup_dir = *leaf;
      else shim = leaf.error().WithContext("setting the attempt's cgroup limits");
    }
    if (!options_.cgroups && !cpu_load_.empty()) {
      // Without cgroups: pin to the least loaded CPUs and cap the data size.
      Job::Rank& rank = job.ranks[static_cast<size_t>(r)];
      const int64_t milli = job.spec.compute.cpus.milli();
      const size_t want = std::min(cpu_load_.size(), static_cast<size_t>(std::max<int64_t>(1, (milli + 999) / 1000)));
      std::vector<int> order(cpu_load_.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return cpu_load_[static_cast<size_t>(a)] < cpu_load_[static_cast<size_t>(b)];
      });
      rank.pinned.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(want));
      rank.load_per_cpu = milli / static_cast<int64_t>(want);
      for (int i : rank.pinned) cpu_load_[static_cast<size_t>(i)] += rank.load_per_cpu;
      start.cpu_list = CpuList(rank);
      start.rlimit_data = job.spec.compute.memory.milli() / 1000;
    }
    if (!options_.cgroups || !start.cgroup_dir.empty()) shim = runner_->Start(start);
    if (!shim.ok()) {
      job.first_failure = Result<exec::ExitStatus>(shim.status());
      for (int rest = r; rest < workers; ++rest) job.ranks[static_cast<size_t>(rest)].done = true;
      break;
    }
    job.ranks[static_cast<size_t>(r)].shim = *shim;
    pids.push_back(shim->pid);
  }
  if (pids.empty()) {
    FinishAttempt(job, *job.first_failure);
    return;
  }
  attempt.state = AttemptState::kRunning;
  attempt.pinned_cpus = PinnedCpus(job);
  attempt.shim_pid = job.ranks[0].shim->pid;
  attempt.shim_start_ticks = job.ranks[0].shim->start_ticks;
  attempt.started_at = NowMs();
  ObserveSeconds("taugrid_job_start_seconds", {}, *attempt.started_at - admitted_ms);
  job.rec.state = JobState::kRunning;
  job.rec.started_at = job.rec.started_at.value_or(*attempt.started_at);
  {
    std::vector<std::string> pid_text;
    for (int64_t pid : pids) pid_text.push_back(std::to_string(pid));
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(job);
    if (st.ok()) st = SaveAttempt(job, attempt);
    if (st.ok()) {
      st = AppendEvent(job, "Started", "", fmt::format("attempt {} ({} {})", number, pids.size() == 1 ? "pid" : "pids",
                                                       Join(pid_text, ", ")));
    }
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) LogStoreFailure(job, st);
  }
  for (int r = 0; r < workers; ++r) {
    if (job.ranks[static_cast<size_t>(r)].shim) WatchRank(job, r, *job.ranks[static_cast<size_t>(r)].shim);
  }
  // A cancel that arrived while starting, or a rank that failed to start,
  // stops the rest now.
  if (job.rec.cancel_requested || job.first_failure) StopRanks(job);
}

void JobManager::WatchRank(Job& job, int rank, exec::ShimProcess shim) {
  Job::Rank& r = job.ranks[static_cast<size_t>(rank)];
  r.shim = shim;
  r.token = next_token_++;
  jobs_by_token_[r.token] = {&job, rank};
  if (Status st = runner_->Watch(r.token, shim.pid); !st.ok()) {
    log::Error("jobs", "cannot watch the attempt's process", {{"job", job.rec.id}, {"error", st.ToString()}});
  }
}

void JobManager::StopRanks(Job& job) {
  for (const Job::Rank& r : job.ranks) {
    if (r.shim && !r.done) (void)runner_->Stop(*r.shim);
  }
}

std::string JobManager::CpuList(const Job::Rank& rank) const {
  std::vector<std::string> ids;
  for (int i : rank.pinned) ids.push_back(std::to_string(options_.cpu_ids[static_cast<size_t>(i)]));
  return Join(ids, ",");
}

std::string JobManager::PinnedCpus(const Job& job) const {
  std::vector<std::string> ranks;
  bool any = false;
  for (const Job::Rank& r : job.ranks) {
    any = any || !r.pinned.empty();
    ranks.push_back(CpuList(r));
  }
  return any ? Join(ranks, ";") : "";
}

void JobManager::RestorePinning(Job& job, const std::string& pinned_cpus) {
  if (pinned_cpus.empty() || options_.cgroups) return;
  std::vector<std::string> ranks = Split(pinned_cpus, ';');
  for (size_t r = 0; r < ranks.size() && r < job.ranks.size(); ++r) {
    Job::Rank& rank = job.ranks[r];
    for (const std::string& id : Split(ranks[r], ',')) {
      // A CPU no longer in the daemon's set (it was restarted with
      // another one) carries no load here.
      auto it = std::find(options_.cpu_ids.begin(), options_.cpu_ids.end(), std::atoi(id.c_str()));
      if (!id.empty() && it != options_.cpu_ids.end()) rank.pinned.push_back(static_cast<int>(it - options_.cpu_ids.begin()));
    }
    if (rank.pinned.empty()) continue;
    rank.load_per_cpu = job.spec.compute.cpus.milli() / static_cast<int64_t>(rank.pinned.size());
    for (int i : rank.pinned) cpu_load_[static_cast<size_t>(i)] += rank.load_per_cpu;
  }
}

void JobManager::Release(Job& job) {
  engine_.SetNow(NowMs());
  engine_.Remove(job.rec.id);  // its quota, or its place in a queue
  if (job.holds_resources) {
    used_ -= job.request;
    for (int g : job.gpu_indexes) gpu_busy_[static_cast<size_t>(g)] = false;
    job.holds_resources = false;
  }
  for (const Job::Rank& r : job.ranks) {
    if (r.token) jobs_by_token_.erase(r.token);
    // Leaves of ranks that never ran (removing is idempotent).
    if (options_.cgroups && !r.cgroup.empty()) (void)options_.cgroups->Remove(options_.cgroups->LeafPath(r.cgroup));
    for (int i : r.pinned) cpu_load_[static_cast<size_t>(i)] -= r.load_per_cpu;
  }
  job.ranks.clear();
  job.first_failure.reset();
  job.oom_killed = false;
}

void JobManager::OnShimExit(uint64_t token) {
  auto it = jobs_by_token_.find(token);
  if (it == jobs_by_token_.end()) return;
  auto [job, rank] = it->second;
  RankEnded(*job, rank, runner_->ReadStatus(home_.status_file(job->rec.id, job->rec.attempt, rank).string()));
  RunAdmission();
  Publish();
}

namespace {

bool Succeeded(const Result<exec::ExitStatus>& s) {
  return s.ok() && s->error.empty() && s->exit_code == 0 && s->terminated_by.empty();
}

}  // namespace

void JobManager::RankEnded(Job& job, int rank, const Result<exec::ExitStatus>& status) {
  Job::Rank& r = job.ranks[static_cast<size_t>(rank)];
  if (r.done) return;
  r.done = true;
  if (status.ok()) job.peak_rss_kb = std::max(job.peak_rss_kb, status->max_rss_kb);
  if (options_.cgroups && !r.cgroup.empty()) {
    std::string leaf = options_.cgroups->LeafPath(r.cgroup);
    if (options_.cgroups->OomKilled(leaf)) job.oom_killed = true;
    if (Status st = options_.cgroups->Remove(leaf); !st.ok()) {
      log::Warn("jobs", "cannot remove a cgroup", {{"job", job.rec.id}, {"error", st.ToString()}});
    }
  }
  if (r.token) jobs_by_token_.erase(r.token);
  r.token = 0;
  if (!Succeeded(status) && !job.first_failure) {
    job.first_failure = status;
    StopRanks(job);
  }
  for (const Job::Rank& other : job.ranks) {
    if (!other.done) return;
  }
  FinishAttempt(job, job.first_failure ? *job.first_failure : status);
}

// Decides the outcome of the current attempt from its exit status (or the
// error that kept it from starting) and commits it.
void JobManager::FinishAttempt(Job& job, const Result<exec::ExitStatus>& status) {
  AttemptRecord attempt;
  for (const auto& a : job.attempts) {
    if (a.number == job.rec.attempt) attempt = a;
  }
  attempt.job_id = job.rec.id;
  attempt.number = job.rec.attempt;
  attempt.finished_at = NowMs();
  JobState state = JobState::kFailed;
  std::string reason, message;
  job.rec.exit_code.reset();
  if (!status.ok()) {
    if (status.error().code() == StatusCode::kNotFound && attempt.state == AttemptState::kRunning) {
      reason = "Lost";
      message = "the attempt's supervisor (tau-shim) ended without recording an exit status";
    } else {
      reason = "SetupFailed";
      message = status.error().message();
    }
  } else {
    const exec::ExitStatus& s = *status;
    attempt.exit_code = s.exit_code;
    attempt.signal = s.signal;
    if (s.started_at_ms) attempt.started_at = attempt.started_at.value_or(s.started_at_ms);
    if (s.finished_at_ms) attempt.finished_at = s.finished_at_ms;
    job.rec.exit_code = s.exit_code;
    std::error_code marker_ec;
    bool pip_failed = false;
    for (int r = 0; r < std::max<int>(1, static_cast<int>(job.spec.compute.workers)); ++r) {
      pip_failed = pip_failed || fs::exists(SetupFailedMarker(job.rec.id, job.rec.attempt, r), marker_ec);
    }
    if (!s.error.empty()) {
      reason = "SetupFailed";
      message = s.error;
    } else if (job.oom_killed) {
      reason = "OOMKilled";
      message = fmt::format("the kernel's OOM killer stopped it at its memory limit ({} per worker)",
                            job.spec.compute.memory.ToString());
    } else if (pip_failed) {
      reason = "SetupFailed";
      message = "installing runtime.pip failed; pip's output is in the job's log";
    } else if (s.terminated_by == "deadline") {
      reason = "DeadlineExceeded";
      message = fmt::format("stopped after limits.max_runtime ({})",
                            FormatDuration(job.spec.limits.max_runtime.value_or(Duration(0))));
    } else if (job.rec.cancel_requested) {
      state = JobState::kCancelled;
      reason = "Cancelled";
      message = "cancelled while running";
    } else if (s.exit_code == 0) {
      state = JobState::kSucceeded;
      reason = "Completed";
      message = "exit code 0";
    } else if (s.exit_code) {
      reason = "ExitCode";
      message = fmt::format("exit code {}", *s.exit_code);
    } else if (s.signal) {
      reason = "Signal";
      message = fmt::format("killed by {}", SignalName(*s.signal));
    } else {
      reason = "Lost";
      message = "no exit code or signal recorded";
    }
  }
  if (!job.rec.gpu_fault.empty() && !job.rec.cancel_requested && job.rec.preempted_by.empty()) {
    state = JobState::kFailed;  // stopped because its GPU failed, whatever it exited with
    reason = job.rec.gpu_fault;
    message = job.gpu_fault_message.empty() ? "a GPU under it failed" : job.gpu_fault_message;
  }
  if (!job.rec.preempted_by.empty() && !job.rec.cancel_requested) {
    state = JobState::kFailed;  // even if it exited 0 on SIGTERM: it stopped because asked to
    reason = "Preempted";
    message = fmt::format("preempted by {}", job.rec.preempted_by);
  }
  attempt.state = state == JobState::kSucceeded   ? AttemptState::kSucceeded
                  : state == JobState::kCancelled ? AttemptState::kCancelled
                                                  : AttemptState::kFailed;
  attempt.reason = reason;
  attempt.peak_rss_kb = job.peak_rss_kb;
  Count("taugrid_job_attempts_total", {{"reason", reason}});
  // Another attempt, now (Queued) or after a backoff (Retrying), or the end.
  if (state == JobState::kFailed) state = ApplyRetryPolicy(job, reason, &message);
  job.rec.state = state;
  job.rec.reason = reason;
  job.rec.message = message;
  if (store::IsTerminal(state)) job.rec.finished_at = attempt.finished_at;
  job.rec.preempted_by.clear();
  job.rec.gpu_fault.clear();
  job.gpu_fault_message.clear();
  Release(job);
  auto txn = store_->Begin();
  Status st = txn.status();
  if (st.ok()) st = SaveAttempt(job, attempt);
  if (st.ok()) st = SaveJob(job);
  if (st.ok()) {
    st = AppendEvent(job, state == JobState::kQueued ? "Requeued" : std::string(store::JobStateName(state)), reason,
                     message);
  }
  if (st.ok()) st = txn->Commit();
  if (!st.ok()) LogStoreFailure(job, st);
  if (state == JobState::kRetrying) ArmRetryTimer();
  FollowMetricsFile(job);  // its last lines
  job.progress_stalled = false;
  RefreshCheckpoints(job);
  SealEvidence(job);  // once it has ended
}

// ---- publication --------------------------------------------------------

void JobManager::Publish() {
  auto view = std::make_shared<StateView>();
  view->version = ++version_;
  view->last_event_id = last_event_id_;
  view->jobs.reserve(jobs_by_seq_.size());
  for (auto& [seq, job] : jobs_by_seq_) {
    if (!job->view) {
      auto jv = std::make_shared<JobView>();
      jv->job = job->rec;
      jv->attempts = job->attempts;
      jv->workers = job->spec.compute.workers;
      jv->gpus = job->request.gpus;
      jv->cpus_milli = job->request.cpus_milli;
      jv->memory_bytes = job->request.memory_bytes;
      jv->project = job->spec.experiment.project;
      jv->tags = job->spec.experiment.tags;
      jv->max_restarts = job->spec.retry.max_restarts;
      jv->max_interruptions = options_.max_interruptions;
      jv->checkpoint_dir = home_.checkpoint_dir(job->rec.id).string();
      jv->checkpoint_keep = job->spec.checkpoint.keep;
      if (job->progress && (job->progress->snapshot().lines > 0 || job->progress->snapshot().bad_lines > 0)) {
        jv->progress = job->progress->snapshot();
      }
      jv->progress_stalled = job->progress_stalled;
      for (const auto& [k, v] : job->secret_env) jv->secret_env_names.push_back(k);
      // The view is what readers see: no secret values in it.
      jv->job.secret_env.clear();
      job->view = std::move(jv);
    }
    view->jobs.push_back(job->view);
  }
  publisher_->Publish(std::move(view));
}

}  // namespace tau::server
