// GPU health on the control loop (docs/gpu-health.md): polls and XID events
// from the GPU monitor move each GPU's state machine; an Unhealthy GPU
// leaves schedulable capacity at once and the attempts on it are stopped
// and retried elsewhere.

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/strings.h"
#include "gpu/placement.h"
#include "server/job_json.h"
#include "server/job_manager.h"

namespace tau::server {
using gpu::HealthState;
using store::JobState;

namespace {

bool Serving(HealthState s) { return s == HealthState::kHealthy || s == HealthState::kSuspect; }

// The settings row that holds a GPU's ECC baseline.
std::string EccBaselineKey(const std::string& uuid) { return "gpu.ecc_uncorrected." + uuid; }

}  // namespace

std::vector<int> JobManager::ChooseGpus(const Job& job) const {
  std::vector<gpu::GpuCandidate> candidates;
  for (size_t g = 0; g < gpu_slots_.size() && g < gpu_busy_.size(); ++g) {
    if (!GpuUsable(g) || !GpuOfClass(g, job.spec.compute.gpu_class)) continue;
    const gpu::GpuSample& s = gpu_slots_[g].health.last_sample();
    candidates.push_back({static_cast<int>(g), gpu_slots_[g].health.state(), s.temperature_c, s.utilization_pct,
                          s.memory_used_mib});
  }
  return gpu::PickGpus(std::move(candidates), job.request.gpus);
}

bool JobManager::GpuInService(size_t g) const {
  return g < gpu_slots_.size() && Serving(gpu_slots_[g].health.state()) && !gpu_slots_[g].drained;
}

bool JobManager::GpuUsable(size_t g) const {
  return GpuInService(g) && !gpu_busy_[g] &&
         (options_.allow_foreign_gpu_processes || gpu_slots_[g].foreign_pids.empty());
}

bool JobManager::GpuOfClass(size_t g, const std::string& gpu_class) const {
  return gpu_class == "any" || gpu_class.empty() || (g < options_.gpu_info.size() && options_.gpu_info[g].gpu_class == gpu_class);
}

int64_t JobManager::UsableGpus(const std::string& gpu_class) const {
  int64_t n = 0;
  for (size_t g = 0; g < gpu_slots_.size(); ++g) n += GpuUsable(g) && GpuOfClass(g, gpu_class) ? 1 : 0;
  return n;
}

std::string JobManager::GpuShortage(int64_t gpus) const {
  if (gpus == 0) return "";
  int64_t in_service = 0;
  std::vector<std::string> out;
  for (size_t g = 0; g < gpu_slots_.size(); ++g) {
    if (GpuInService(g)) {
      ++in_service;
      continue;
    }
    const GpuSlot& slot = gpu_slots_[g];
    std::string uuid = GpuUuid(g);
    std::string why = slot.drained ? "drained" : std::string(gpu::HealthStateName(slot.health.state()));
    if (!slot.drained && !slot.health.message().empty()) why += ": " + slot.health.message();
    out.push_back(fmt::format("GPU {} {} ({})", g, uuid, why));
  }
  if (in_service >= gpus) {
    std::vector<std::string> foreign;
    for (size_t g = 0; g < gpu_slots_.size(); ++g) {
      if (!gpu_slots_[g].foreign_pids.empty() && !options_.allow_foreign_gpu_processes && !gpu_busy_[g]) {
        foreign.push_back(fmt::format("GPU {} (pids {})", g, fmt::join(gpu_slots_[g].foreign_pids, ", ")));
      }
    }
    if (foreign.empty()) return "";
    return fmt::format("it needs {} GPU{}; busy with processes TauGrid did not start: {}", gpus, gpus == 1 ? "" : "s",
                       Join(foreign, "; "));
  }
  return fmt::format("it needs {} GPU{} and {} of the machine's {} are in service; out of service: {}", gpus,
                     gpus == 1 ? "" : "s", in_service, gpu_slots_.size(), Join(out, "; "));
}

std::string JobManager::GpuUuid(size_t g) const {
  return g < options_.gpu_info.size() ? options_.gpu_info[g].uuid : std::to_string(g);
}

Result<size_t> JobManager::FindGpu(const std::string& name) const {
  const size_t count = std::min(options_.gpu_info.size(), gpu_slots_.size());
  if (name.empty()) return InvalidArgumentError("name a GPU by its index or its UUID (tau nodes lists them)");
  if (name.find_first_not_of("0123456789") == std::string::npos) {
    if (name.size() <= 6 && static_cast<size_t>(std::stoul(name)) < count) return static_cast<size_t>(std::stoul(name));
    return NotFoundError(fmt::format("this machine has no GPU {} (it has {}: 0 to {}; tau nodes lists them)", name,
                                     count, count == 0 ? 0 : count - 1));
  }
  std::vector<size_t> matches;
  for (size_t g = 0; g < count; ++g) {
    const std::string& uuid = options_.gpu_info[g].uuid;
    if (uuid == name) return g;
    if (uuid.rfind(name, 0) == 0) matches.push_back(g);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) return NotFoundError(fmt::format("this machine has no GPU \"{}\" (tau nodes lists them)", name));
  std::vector<std::string> named;
  for (size_t g : matches) named.push_back(fmt::format("{} ({})", options_.gpu_info[g].uuid, g));
  return InvalidArgumentError(fmt::format("\"{}\" is the start of {} GPUs' UUIDs: {}; give more of it, or the index",
                                          name, matches.size(), Join(named, ", ")));
}

Result<std::string> JobManager::GpuUuidOf(const std::string& name) const {
  TAU_ASSIGN_OR_RETURN(size_t g, FindGpu(name));
  return GpuUuid(g);
}

void JobManager::SaveGpu(size_t g) {
  if (g >= options_.gpu_info.size()) return;
  const GpuSlot& slot = gpu_slots_[g];
  store::GpuRecord rec{GpuUuid(g), std::string(gpu::HealthStateName(slot.health.state())),
                       slot.health.reason(), slot.health.message(), NowMs(), slot.drained};
  if (Status st = store_->UpsertGpu(rec); !st.ok()) {
    log::Error("gpu", "cannot store a GPU's state", {{"gpu", rec.uuid}, {"error", st.ToString()}});
  }
}

Status JobManager::AppendGpuEvent(size_t g, std::string type, std::string reason, std::string message) {
  if (g >= options_.gpu_info.size()) return Status::Ok();
  return store_->AppendGpuEvent({0, NowMs(), GpuUuid(g), std::move(type), std::move(reason), std::move(message)})
      .status();
}

void JobManager::LoadGpuState() {
  auto rows = store_->LoadGpus();
  if (!rows.ok()) {
    log::Error("gpu", "cannot load the GPUs' stored state", {{"error", rows.status().ToString()}});
    return;
  }
  for (const store::GpuRecord& r : *rows) {
    auto g = FindGpu(r.uuid);
    if (!g.ok()) continue;  // a GPU that is gone
    GpuSlot& slot = gpu_slots_[*g];
    slot.drained = r.drained;
    if (auto state = gpu::ParseHealthState(r.state)) slot.health.Restore(*state, r.reason, r.message);
  }
  // The ECC counts last seen: errors that arrived while no daemon watched
  // show at the first poll.
  for (size_t g = 0; g < gpu_slots_.size() && g < options_.gpu_info.size(); ++g) {
    auto stored = store_->Setting(EccBaselineKey(GpuUuid(g)));
    if (!stored.ok()) {
      log::Error("gpu", "cannot load a GPU's ECC count", {{"gpu", GpuUuid(g)}, {"error", stored.status().ToString()}});
      continue;
    }
    if (stored->empty()) continue;
    char* end = nullptr;
    long long n = std::strtoll(stored->c_str(), &end, 10);
    if (*end != '\0' || n < 0) continue;  // not ours to interpret: the first poll sets it again
    gpu_slots_[g].health.RestoreEccBaseline(n);
    gpu_slots_[g].stored_ecc = n;
  }
}

void JobManager::SaveEccBaseline(size_t g) {
  if (g >= gpu_slots_.size() || g >= options_.gpu_info.size()) return;
  GpuSlot& slot = gpu_slots_[g];
  const std::optional<int64_t> baseline = slot.health.ecc_baseline();
  if (!baseline || baseline == slot.stored_ecc) return;
  if (Status st = store_->SetSetting(EccBaselineKey(GpuUuid(g)), std::to_string(*baseline)); !st.ok()) {
    log::Error("gpu", "cannot store a GPU's ECC count", {{"gpu", GpuUuid(g)}, {"error", st.ToString()}});
    return;
  }
  slot.stored_ecc = baseline;
}

void JobManager::ApplyGpuChange(size_t g, const std::optional<gpu::HealthChange>& change) {
  if (!change) return;
  const std::string uuid = GpuUuid(g);
  auto level = change->to == HealthState::kUnhealthy ? log::Level::kError
               : change->to == HealthState::kHealthy ? log::Level::kInfo
                                                     : log::Level::kWarn;
  log::Write(level, "gpu", fmt::format("GPU is {}", gpu::HealthStateName(change->to)),
             {{"gpu", uuid}, {"reason", change->reason}, {"message", change->message}});
  auto txn = store_->Begin();
  Status st = txn.status();
  if (st.ok()) st = AppendGpuEvent(g, std::string(gpu::HealthStateName(change->to)), change->reason, change->message);
  if (st.ok()) st = txn->Commit();
  if (!st.ok()) log::Error("gpu", "cannot store a GPU event", {{"gpu", uuid}, {"error", st.ToString()}});
  SaveGpu(g);
  if (change->to == HealthState::kUnhealthy) {
    FaultJobsOnGpu(g, "GpuFault",
                   fmt::format("GPU {} ({}) is Unhealthy: {}", g, uuid, change->message.empty() ? change->reason : change->message));
  }
  ScheduleAdmission();  // capacity changed either way
}

bool JobManager::FaultJob(Job& job, const std::string& reason, const std::string& message) {
  if (job.rec.state != JobState::kRunning && job.rec.state != JobState::kAdmitted) return false;
  if (!job.rec.gpu_fault.empty() || job.rec.cancel_requested || !job.rec.preempted_by.empty()) return false;
  job.rec.gpu_fault = reason;
  job.gpu_fault_message = message;
  // Recorded before the signal: a restart in between still ends the
  // attempt with this reason.
  auto txn = store_->Begin();
  Status st = txn.status();
  if (st.ok()) st = SaveJob(job);
  if (st.ok()) {
    st = AppendEvent(job, reason, reason,
                     fmt::format("{}; SIGTERM sent, SIGKILL after {}", message,
                                 FormatDuration(job.spec.checkpoint.grace_period)));
  }
  if (st.ok()) st = txn->Commit();
  if (!st.ok()) LogStoreFailure(job, st);
  StopRanks(job);
  return true;
}

void JobManager::FaultJobsOnGpu(size_t g, const std::string& reason, const std::string& message) {
  for (auto& [seq, job_ptr] : jobs_by_seq_) {
    Job& job = *job_ptr;
    if (std::find(job.gpu_indexes.begin(), job.gpu_indexes.end(), static_cast<int>(g)) == job.gpu_indexes.end()) continue;
    FaultJob(job, reason, message);
  }
  Publish();
}

void JobManager::FaultJobsOnNode(const std::vector<std::pair<std::string, int64_t>>& attempts,
                                 const std::string& message) {
  bool any = false;
  for (const auto& [id, attempt] : attempts) {
    auto it = jobs_by_id_.find(id);
    // 0: a pod without the attempt label (made by an operator from the
    // job's object), taken for the current attempt's.
    if (it == jobs_by_id_.end() || (attempt != 0 && it->second->rec.attempt != attempt)) continue;
    if (FaultJob(*it->second, "GpuFault", message)) {
      any = true;
      log::Warn("gpu", "a job's node has a GPU fault; its attempt is stopped and retried",
                {{"job", id}, {"message", message}});
    }
  }
  if (any) Publish();
}

void JobManager::OnGpuSample(int index, gpu::GpuSample sample) {
  size_t g = static_cast<size_t>(index);
  if (index < 0 || g >= gpu_slots_.size()) return;
  GpuSlot& slot = gpu_slots_[g];
  // Processes on a GPU no job of ours holds are someone else's.
  std::vector<int64_t> foreign = gpu_busy_[g] ? std::vector<int64_t>{} : sample.process_pids;
  bool foreign_changed = foreign != slot.foreign_pids;
  slot.foreign_pids = std::move(foreign);
  const bool node_reboot = sample.recovery_action == 2;
  ApplyGpuChange(g, slot.health.OnSample(sample));
  SaveEccBaseline(g);
  if (node_reboot) {
    // The driver asks for a reboot of the machine: every GPU is out.
    for (size_t all = 0; all < gpu_slots_.size(); ++all) {
      ApplyGpuChange(all, gpu_slots_[all].health.OnFatal(
                              "RecoveryAction", fmt::format("GPU {}'s driver asks for a reboot of the machine", g)));
    }
  }
  if (foreign_changed) ScheduleAdmission();
}

void JobManager::OnGpuXid(gpu::XidEvent event) {
  const gpu::XidClass cls = options_.xid_catalog.ClassOf(event.xid);
  const std::string what = options_.xid_catalog.Describe(event.xid);
  if (event.gpu_index < 0 || static_cast<size_t>(event.gpu_index) >= gpu_slots_.size()) {
    log::Warn("gpu", "an XID event for a GPU this machine does not list", {{"xid", std::to_string(event.xid)}});
    return;
  }
  const size_t g = static_cast<size_t>(event.gpu_index);
  if (g < last_xid_.size()) last_xid_[g] = event.xid;
  if (Status st = AppendGpuEvent(g, "Xid", std::string(gpu::XidClassName(cls)), what); !st.ok()) {
    log::Error("gpu", "cannot store a GPU event", {{"error", st.ToString()}});
  }
  switch (cls) {
    case gpu::XidClass::kWatch:
      log::Warn("gpu", "XID event (watch)", {{"gpu", GpuUuid(g)}, {"xid", what}});
      break;
    case gpu::XidClass::kApp:
      // The job's own fault: it fails, the GPU stays in service.
      FaultJobsOnGpu(g, "GpuXid", fmt::format("{} on GPU {} ({}), an application error", what, g, GpuUuid(g)));
      break;
    case gpu::XidClass::kReset:
    case gpu::XidClass::kRma:
      ApplyGpuChange(g, gpu_slots_[g].health.OnFatal("XidFatal", fmt::format("{} ({} class)", what, gpu::XidClassName(cls))));
      break;
    case gpu::XidClass::kReboot:
      // The machine needs a reboot: every GPU is out.
      for (size_t all = 0; all < gpu_slots_.size(); ++all) {
        ApplyGpuChange(all, gpu_slots_[all].health.OnFatal(
                                "XidFatal", fmt::format("{} on GPU {}: the machine needs a reboot", what, g)));
      }
      break;
  }
}

void JobManager::OnGpuXidUnreadable(int index, std::optional<std::string> why) {
  if (index < 0 || static_cast<size_t>(index) >= gpu_slots_.size()) return;
  ApplyGpuChange(static_cast<size_t>(index), gpu_slots_[static_cast<size_t>(index)].health.OnXidUnreadable(std::move(why)));
}

Status JobManager::ClearGpu(const std::string& name) {
  TAU_ASSIGN_OR_RETURN(size_t g, FindGpu(name));
  auto change = gpu_slots_[g].health.Clear();
  if (!options_.gpu_health_monitored) {
    auto healthy = gpu_slots_[g].health.OnSample(gpu::GpuSample{.readable = true});
    if (healthy) change = healthy;
  }
  ApplyGpuChange(g, change);
  SaveEccBaseline(g);
  return Status::Ok();
}

Status JobManager::DrainGpu(const std::string& name, bool drained) {
  TAU_ASSIGN_OR_RETURN(size_t g, FindGpu(name));
  if (gpu_slots_[g].drained == drained) return Status::Ok();
  gpu_slots_[g].drained = drained;
  TAU_RETURN_IF_ERROR(AppendGpuEvent(g, drained ? "Drained" : "Undrained", "",
                                     drained ? "running work finishes; nothing new starts" : "in service again"));
  SaveGpu(g);
  ScheduleAdmission();
  return Status::Ok();
}

std::string JobManager::GpusJson() {
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t g = 0; g < gpu_slots_.size(); ++g) {
    const GpuSlot& slot = gpu_slots_[g];
    const gpu::GpuSample& s = slot.health.last_sample();
    nlohmann::json info = nlohmann::json::object();
    if (g < options_.gpu_info.size()) {
      const gpu::GpuInfo& i = options_.gpu_info[g];
      info = {{"model", i.model}, {"gpu_class", i.gpu_class}, {"memory_mib", i.memory_mib}, {"pci_bus_id", i.pci_bus_id}};
    }
    nlohmann::json job = nullptr;
    for (const auto& [seq, j] : jobs_by_seq_) {
      if (j->holds_resources &&
          std::find(j->gpu_indexes.begin(), j->gpu_indexes.end(), static_cast<int>(g)) != j->gpu_indexes.end()) {
        job = {{"id", j->rec.id}, {"name", j->rec.name}};
      }
    }
    gpus.push_back({{"index", g},
                    {"uuid", GpuUuid(g)},
                    {"model", info.value("model", "")},
                    {"gpu_class", info.value("gpu_class", "")},
                    {"memory_mib", info.value("memory_mib", int64_t{0})},
                    {"pci_bus_id", info.value("pci_bus_id", "")},
                    {"health", gpu::HealthStateName(slot.health.state())},
                    {"reason", slot.health.reason()},
                    {"message", slot.health.message()},
                    {"drained", slot.drained},
                    {"schedulable", GpuInService(g)},
                    {"foreign_processes", slot.foreign_pids},
                    {"temperature_c", OptionalToJson(s.temperature_c)},
                    {"power_w", s.power_mw ? nlohmann::json(static_cast<double>(*s.power_mw) / 1000.0) : nlohmann::json(nullptr)},
                    {"utilization_pct", OptionalToJson(s.utilization_pct)},
                    {"memory_used_mib", OptionalToJson(s.memory_used_mib)},
                    {"ecc_uncorrected", OptionalToJson(s.ecc_uncorrected)},
                    {"job", job}});
  }
  nlohmann::json events = nlohmann::json::array();
  if (auto rows = store_->LoadGpuEvents("", 50); rows.ok()) {
    for (const auto& e : *rows) {
      events.push_back({{"at", TimeToJson(e.at)}, {"uuid", e.uuid}, {"type", e.type}, {"reason", e.reason},
                        {"message", e.message}});
    }
  }
  // Out of service: drained or Unhealthy (a Suspect GPU still takes work).
  int64_t out_of_service = 0;
  for (const GpuSlot& slot : gpu_slots_) {
    out_of_service += slot.drained || slot.health.state() == HealthState::kUnhealthy ? 1 : 0;
  }
  return nlohmann::json{{"monitored", options_.gpu_health_monitored},
                        {"out_of_service", out_of_service},
                        {"gpus", gpus},
                        {"events", events}}
      .dump();
}

}  // namespace tau::server
