// Attempts: starting the ranks of one (all or none), following them, and
// deciding how the attempt ended.

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "common/log.h"
#include "common/open_retrying.h"
#include "common/strings.h"
#include "exec/oom_evidence.h"
#include "server/execution/local_rank_files.h"
#include "server/job_manager.h"
#include "server/jobs/job_state_machine.h"
#include "server/local_ray.h"
#include "server/pip_env.h"
#include "spec/command.h"

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

}  // namespace

// What rank `rank` of attempt `attempt` runs. A gang (workers > 1) or a
// torchrun job gets the rendezvous contract: MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE, NODE_RANK and TAU_WORKER_INDEX (the worker's index), and for
// one process per worker (launcher command) also RANK, LOCAL_RANK and
// LOCAL_WORLD_SIZE; torchrun sets those for the processes it starts. A
// local rayjob has one rank, the Ray cluster, run on `ray_python`.
AttemptStart JobManager::BuildAttemptStart(const Job& job, int64_t attempt, int rank, int port,
                                           const std::string& ray_python) const {
  const std::string& id = job.rec.id;
  const spec::JobSpec& spec = job.spec;
  const int64_t workers = spec.compute.workers;
  const bool torchrun = spec.run.launcher == spec::Launcher::kTorchrun;
  const bool ray = spec.run.workload_kind == spec::WorkloadKind::kRayJob;
  AttemptStart s;
  s.ref = {id, attempt, rank};
  PipSetup pip{(home_.attempt_dir(id, attempt) / "requirements.txt").string(), (home_.root() / "venvs").string(),
               SetupFailedMarker(id, attempt, rank), ""};
  if (ray) {
    // One process runs the whole local Ray cluster; runtime.pip layers an
    // environment on Ray's Python, and the cluster runs on that one.
    pip.base_python = ray_python;
    LocalRaySetup setup;
    setup.python = spec.runtime.pip.empty() ? ray_python : "python3";
    setup.temp_dir = RayTempDir(id, attempt);
    setup.nodes = workers;
    setup.cpus_per_node = std::max<int64_t>(1, (spec.compute.cpus.milli() + 999) / 1000);
    setup.gpus_per_node = spec.compute.gpus;
    setup.memory_per_node = spec.compute.memory.milli() / 1000;
    setup.logs_dir = (home_.attempt_dir(id, attempt) / "ray-logs").string();
    setup.submission_id = fmt::format("{}-{}", id, attempt);
    setup.entrypoint = spec::BuildRayEntrypoint(spec);
    setup.info_file = (home_.attempt_dir(id, attempt) / "ray.json").string();
    s.argv = LocalRayCommand(setup);
  } else {
    spec::Rendezvous rendezvous{std::to_string(workers), std::to_string(rank), "127.0.0.1", std::to_string(port)};
    s.argv = spec::BuildWorkerCommand(spec, rendezvous);
  }
  if (!spec.runtime.pip.empty()) s.argv = WrapWithPipSetup(pip, s.argv);
  s.env = options_.base_env;
  std::vector<std::string> gpus;
  // A local Ray cluster takes all the job's GPUs and shares them out.
  const size_t per_rank = static_cast<size_t>(ray ? spec.compute.gpus * workers : spec.compute.gpus);
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
  if (!ray && (workers > 1 || torchrun)) {
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
  s.grace_ms = spec.checkpoint.grace_period.count();
  if (spec.limits.max_runtime) s.deadline_ms = spec.limits.max_runtime->count();
  // Ray stops its job and then every node, which takes some seconds more.
  if (ray) s.grace_ms += kLocalRayStopMs;
  return s;
}

Status JobManager::PrepareAttempt(Job& job) {
  if (!executor_->PreparesAttempts()) return Status::Ok();
  AttemptPlan plan;
  plan.job_id = job.rec.id;
  plan.attempt = job.rec.attempt + 1;
  plan.spec = job.spec;
  plan.snapshot_path = home_.blob(job.rec.snapshot_digest).string();
  plan.resume_from = ResumePoint(job);
  plan.env = {"TAU_JOB_ID=" + job.rec.id, "TAU_JOB_NAME=" + job.rec.name,
              "TAU_ATTEMPT=" + std::to_string(plan.attempt), "TAU_WORKSPACE=" + job.rec.workspace};
  if (!job.rec.retry_reason.empty()) plan.env.push_back("TAU_RETRY_REASON=" + job.rec.retry_reason);
  if (!plan.resume_from.empty()) plan.env.push_back("TAU_RESUME_FROM=" + plan.resume_from);
  for (const auto& [k, v] : job.secret_env) plan.secret_env.push_back(k + "=" + v);
  return executor_->Prepare(plan);
}

void JobManager::StartAttempt(Job& job, const sched::Admission& admitted) {
  const int64_t number = job.rec.attempt + 1;
  // Take the job's resources and GPUs.
  job.gpu_indexes = ChooseGpus(job);
  for (int g : job.gpu_indexes) gpu_busy_[static_cast<size_t>(g)] = true;
  used_ += job.request;
  job.holds_resources = true;

  std::error_code ec;
  fs::create_directories(home_.attempt_dir(job.rec.id, number), ec);
  if (!ec) fs::create_directories(home_.attempt_lock(job.rec.id, number).parent_path(), ec);
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
  attempt.cluster_queue = admitted.cluster_queue;
  std::vector<std::string> flavors;
  for (const auto& [resource, flavor] : admitted.flavors) flavors.push_back(resource + "=" + flavor);
  attempt.flavors = Join(flavors, ",");
  const std::string chosen_checkpoint = job.rec.resume_from;
  job.rec.resume_from.clear();  // used by this attempt only
  job.rec.retry_at.reset();      // a requeue backoff is over once admitted
  job.rec.state = JobState::kAdmitted;
  job.rec.attempt = number;
  // Why it waited (or why the last attempt ended) is over: a job that
  // runs has no pending reason. The last attempt's end stays in its
  // attempt record and the timeline.
  const std::string waiting_reason = std::exchange(job.rec.reason, "");
  const std::string waiting_message = std::exchange(job.rec.message, "");
  // So is the last attempt's exit code: the job's is the attempt's now running.
  const std::optional<int64_t> waiting_exit = std::exchange(job.rec.exit_code, std::nullopt);
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
      std::string message = fmt::format("attempt {}", number);
      if (!job.resumed_from.empty()) message += fmt::format(", resuming from {}", job.resumed_from);
      if (!attempt.cluster_queue.empty()) {
        message += fmt::format("; by ClusterQueue {}", attempt.cluster_queue);
        if (!flavors.empty()) message += fmt::format(" ({})", Join(flavors, ", "));
      }
      st = AppendEvent(job, "Admitted", "", message);
    }
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) {
      // The database still says Queued; so does memory again.
      LogStoreFailure(job, st);
      Release(job);
      job.rec.state = JobState::kQueued;
      job.rec.attempt = number - 1;
      job.rec.resume_from = chosen_checkpoint;
      job.rec.reason = waiting_reason;
      job.rec.message = waiting_message;
      job.rec.exit_code = waiting_exit;
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
  const bool ray = job.spec.run.workload_kind == spec::WorkloadKind::kRayJob;
  std::string ray_python;
  if (ray && options_.runs_locally) {
    auto found = RayPython();  // it was there at submit; it may be gone now
    if (!found.ok()) {
      FinishAttempt(job, found.status());
      return;
    }
    ray_python = *found;
  }
  // All ranks or none: if one cannot start, the started ones are stopped
  // and the attempt fails with that error once they are gone.
  const int workers = AttemptRanks(job.spec);
  // Only a rendezvous (a gang, or torchrun) is told a port.
  const bool rendezvous = !ray && (job.spec.compute.workers > 1 || job.spec.run.launcher == spec::Launcher::kTorchrun);
  const int port = rendezvous ? FreeLoopbackPort() : 0;
  const RankShare share = AttemptRankShare(job.spec);
  job.ranks.assign(static_cast<size_t>(workers), Job::Rank{});
  job.first_failure.reset();
  job.peak_rss_kb = 0;
  job.oom_evidence.clear();
  job.oom_kills_at_start.reset();
  if (!options_.cgroups && options_.oom_kill_count) job.oom_kills_at_start = options_.oom_kill_count();
  std::vector<int64_t> pids;
  for (int r = 0; r < workers; ++r) {
    AttemptStart start = BuildAttemptStart(job, number, r, port, ray_python);
    Result<RankHandle> shim = InternalError("not started");
    if (options_.cgroups) {
      std::string name = CgroupLeafName(start.ref);
      job.ranks[static_cast<size_t>(r)].cgroup = name;
      auto leaf = options_.cgroups->CreateLeaf(name, {share.cpus_milli, share.memory_bytes, exec::CgroupLimits{}.pids});
      if (leaf.ok()) start.cgroup_dir = *leaf;
      else shim = leaf.error().WithContext("setting the attempt's cgroup limits");
    }
    if (!options_.cgroups && !cpu_load_.empty()) {
      // Without cgroups: pin to the least loaded CPUs and cap the data size.
      Job::Rank& rank = job.ranks[static_cast<size_t>(r)];
      const int64_t milli = share.cpus_milli;
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
      // Per process, so not for a Ray cluster's many (its memory is held
      // only by a cgroup).
      if (!ray) start.rlimit_data = share.memory_bytes;
    }
    if (!options_.cgroups || !start.cgroup_dir.empty()) shim = executor_->Start(start);
    if (!shim.ok()) {
      job.first_failure = Result<exec::ExitStatus>(shim.status());
      for (int rest = r; rest < workers; ++rest) job.ranks[static_cast<size_t>(rest)].done = true;
      break;
    }
    job.ranks[static_cast<size_t>(r)].handle = *shim;
    pids.push_back(shim->id);
  }
  if (pids.empty()) {
    FinishAttempt(job, *job.first_failure);
    return;
  }
  attempt.state = AttemptState::kRunning;
  attempt.pinned_cpus = PinnedCpus(job);
  attempt.shim_pid = job.ranks[0].handle->id;
  attempt.shim_start_ticks = job.ranks[0].handle->since;
  attempt.started_at = NowMs();
  ObserveSeconds("taugrid_job_start_seconds", {}, *attempt.started_at - admitted_ms);
  job.rec.state = JobState::kRunning;
  job.rec.started_at = job.rec.started_at.value_or(*attempt.started_at);
  // Its progress rate starts again with this attempt's lines.
  if (!job.progress) job.progress = std::make_shared<progress::Tracker>();
  job.progress->StartAttempt(*attempt.started_at);
  {
    // "Running" records what has happened: the shims run, and hold their
    // locks, so a restarted daemon finds them however far this write got.
    // It goes with the job's next write (for a short job, its end) or with
    // the next flush of deferred changes, not in a commit of its own.
    std::vector<std::string> pid_text;
    for (int64_t pid : pids) pid_text.push_back(std::to_string(pid));
    Status st = DeferSaveJob(job);
    if (st.ok()) st = DeferSaveAttempt(job, attempt);
    if (st.ok()) {
      st = DeferEvent(job, "Started", "", fmt::format("attempt {} ({} {})", number, pids.size() == 1 ? "pid" : "pids",
                                                      Join(pid_text, ", ")));
    }
    if (!st.ok()) LogStoreFailure(job, st);
  }
  for (int r = 0; r < workers; ++r) {
    if (job.ranks[static_cast<size_t>(r)].handle) WatchRank(job, r, *job.ranks[static_cast<size_t>(r)].handle);
  }
  if (job.spec.limits.max_runtime) {
    ArmShimBackstop(job, std::chrono::milliseconds(job.spec.limits.max_runtime->count()) + ShimGrace(job), true);
  }
  // A cancel that arrived while starting, or a rank that failed to start,
  // stops the rest now.
  if (job.rec.cancel_requested || job.first_failure) StopRanks(job);
}

void JobManager::WatchRank(Job& job, int rank, RankHandle handle) {
  Job::Rank& r = job.ranks[static_cast<size_t>(rank)];
  r.handle = handle;
  r.token = next_token_++;
  jobs_by_token_[r.token] = {&job, rank};
  if (Status st = executor_->Watch(r.token, handle); !st.ok()) {
    log::Error("jobs", "cannot watch the attempt's process", {{"job", job.rec.id}, {"error", st.ToString()}});
  }
}

void JobManager::StopRanks(Job& job) {
  for (const Job::Rank& r : job.ranks) {
    if (r.handle && !r.done) (void)executor_->Stop(*r.handle);
  }
  ArmShimBackstop(job, ShimGrace(job), false);
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
    rank.load_per_cpu = AttemptRankShare(job.spec).cpus_milli / static_cast<int64_t>(rank.pinned.size());
    for (int i : rank.pinned) cpu_load_[static_cast<size_t>(i)] += rank.load_per_cpu;
  }
}

void JobManager::Release(Job& job) {
  admission_->SetNow(NowMs());
  admission_->Withdraw(job.rec.id);  // its quota, or its place in a queue
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
  job.end_unknown = false;
  job.deadline_backstop = false;
}

void JobManager::OnShimExit(uint64_t token) {
  auto it = jobs_by_token_.find(token);
  if (it == jobs_by_token_.end()) return;
  auto [job, rank] = it->second;
  auto status = ReadRankStatus(*job, rank);
  if (!status.ok() && IsTransientReadError(status.error()) && options_.after) {
    // The status could not be read for want of descriptors or memory: how
    // the rank ended is not concluded from that; it is read again shortly.
    log::Warn("jobs", "cannot read a rank's exit status for now; reading it again shortly",
              {{"job", job->rec.id}, {"rank", std::to_string(rank)}, {"error", status.error().ToString()}});
    options_.after(kStatusRereadDelay, [this, token] { OnShimExit(token); });
    return;
  }
  if (status.ok()) RankStatusFound(*job, rank, *status);
  else if (status.error().code() == StatusCode::kNotFound) ShimLost(*job, rank);
  else RankEnded(*job, rank, status);
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
  if (!options_.cgroups && status.ok() && !job.oom_killed && !job.rec.cancel_requested &&
      job.rec.preempted_by.empty() && job.rec.gpu_fault.empty()) {
    // No memory.events to read: what the kernel and the rank's peak RSS say.
    exec::OomClues clues;
    clues.signal = status->signal.value_or(0);
    clues.terminated_by = status->terminated_by;
    clues.peak_rss_kb = status->max_rss_kb;
    clues.limit_bytes = job.spec.run.workload_kind == spec::WorkloadKind::kRayJob ? 0 : AttemptRankShare(job.spec).memory_bytes;
    if (clues.signal == SIGKILL) {
      clues.kills_before = job.oom_kills_at_start;
      if (options_.oom_kill_count) clues.kills_after = options_.oom_kill_count();
    }
    job.oom_evidence = exec::OomKillEvidence(clues);
    job.oom_killed = !job.oom_evidence.empty();
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
  job.rec.exit_code.reset();
  AttemptEndFacts facts;
  facts.status = status;
  facts.was_running = attempt.state == AttemptState::kRunning;
  facts.end_unknown = job.end_unknown;
  facts.deadline_backstop = job.deadline_backstop;
  facts.cancel_requested = job.rec.cancel_requested;
  facts.oom_killed = job.oom_killed;
  facts.oom_evidence = job.oom_evidence;
  facts.memory_per_worker = job.spec.compute.memory.ToString();
  facts.max_runtime = FormatDuration(job.spec.limits.max_runtime.value_or(Duration(0)));
  facts.gpu_fault = job.rec.gpu_fault;
  facts.gpu_fault_message = job.gpu_fault_message;
  facts.preempted_by = job.rec.preempted_by;
  if (status.ok()) {
    const exec::ExitStatus& s = *status;
    attempt.exit_code = s.exit_code;
    attempt.signal = s.signal;
    if (s.started_at_ms) attempt.started_at = attempt.started_at.value_or(s.started_at_ms);
    if (s.finished_at_ms) attempt.finished_at = s.finished_at_ms;
    job.rec.exit_code = s.exit_code;
    std::error_code marker_ec;
    for (int r = 0; r < AttemptRanks(job.spec); ++r) {
      facts.setup_failed = facts.setup_failed || fs::exists(SetupFailedMarker(job.rec.id, job.rec.attempt, r), marker_ec);
    }
  }
  const AttemptEnd end = EndOfAttempt(facts);
  JobState state = end.state;
  std::string reason = end.reason;
  std::string message = end.message;
  attempt.state = AttemptStateOf(state);
  attempt.reason = reason;
  attempt.peak_rss_kb = job.peak_rss_kb;
  Count("taugrid_job_attempts_total", {{"reason", reason}});
  // Another attempt, now (Queued) or after a backoff (Retrying), or the end.
  if (state == JobState::kFailed) state = ApplyRetryPolicy(job, reason, attempt.signal.value_or(0), &message);
  if (state == JobState::kQueued && reason == "Preempted") state = ApplyRequeueBackoff(job, &reason, &message);
  if (!IsLegalTransition(job.rec.state, state)) {
    log::Error("jobs", "an attempt's end leads to a state the job cannot reach from its own",
               {{"job", job.rec.id},
                {"from", std::string(store::JobStateName(job.rec.state))},
                {"to", std::string(store::JobStateName(state))}});
  }
  job.rec.state = state;
  job.rec.reason = reason;
  job.rec.message = message;
  if (store::IsTerminal(state)) job.rec.finished_at = attempt.finished_at;
  job.rec.preempted_by.clear();
  job.rec.gpu_fault.clear();
  job.gpu_fault_message.clear();
  Release(job);
  if (job.spec.run.workload_kind == spec::WorkloadKind::kRayJob) {
    // The cluster removes it as it stops; not when it was killed.
    std::error_code ec;
    fs::remove_all(RayTempDir(job.rec.id, attempt.number), ec);
  }
  job.view.reset();
  bool found = false;
  for (auto& a : job.attempts) {
    if (a.number == attempt.number) {
      a = attempt;
      found = true;
    }
  }
  if (!found) job.attempts.push_back(attempt);
  const store::EventRecord event{0, job.rec.id, NowMs(),
                                 state == JobState::kQueued ? "Requeued" : std::string(store::JobStateName(state)),
                                 reason, message};
  Status st = CommitEnd(job, attempt.number, event);
  if (!st.ok()) {
    // Kept, shown as ended, and written when the disk has room again.
    LogStoreFailure(job, st);
    unrecorded_ends_[{job.rec.id, attempt.number}] = event;
    ArmStoreRetry();
  }
  // Once the end is recorded (a restart in between still finds the
  // attempt's objects); the next attempt, if any, is prepared when queued.
  executor_->Discard(job.rec.id);
  if (state == JobState::kRetrying) ArmRetryTimer();
  FollowMetricsFile(job);  // its last lines
  job.progress_stalled = false;
  if (job.progress) job.progress->SetStalled(false);
  RefreshCheckpoints(job);
  SealEvidence(job);  // once it has ended and its end is recorded
}

Status JobManager::CommitEnd(Job& job, int64_t number, const store::EventRecord& event) {
  job.view.reset();
  // Its deferred writes go first, in the same transaction; kept for the
  // next try when it does not commit.
  const Job::Deferred pending = job.deferred;
  int64_t event_id = 0;
  Status st = [&]() -> Status {
    TAU_ASSIGN_OR_RETURN(auto txn, store_->Begin());
    TAU_RETURN_IF_ERROR(WriteDeferred(job, /*record_follows=*/true));
    for (const auto& a : job.attempts) {
      if (a.number == number) TAU_RETURN_IF_ERROR(store_->UpsertAttempt(a));
    }
    TAU_RETURN_IF_ERROR(store_->UpdateJob(job.rec));
    TAU_ASSIGN_OR_RETURN(event_id, store_->AppendEvent(event));
    return txn.Commit();
  }();
  if (!st.ok()) {
    job.deferred = pending;
    return st;
  }
  last_event_id_ = event_id;
  return Status::Ok();
}

bool JobManager::HasUnrecordedEnd(const std::string& id) const {
  auto it = unrecorded_ends_.lower_bound({id, 0});
  return it != unrecorded_ends_.end() && it->first.first == id;
}

}  // namespace tau::server
