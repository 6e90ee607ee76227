// The JobManager's queueing side: the Kueue configuration (defaults,
// apply, load), the views of the queues (tau queues, tau why), steering
// (hold, release, set-priority) and the admission pass that runs the
// engine and preempts.

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "common/log.h"
#include "common/strings.h"
#include "render/kueue_config.h"
#include "sched/fair_sharing.h"
#include "sched/requeue_backoff.h"
#include "server/job_manager.h"
#include "spec/json_codec.h"

namespace tau::server {
using store::JobState;

sched::KueueConfig DefaultKueueConfig(const sched::Resources& capacity, const std::string& gpu_class) {
  sched::KueueConfig c;
  c.resource_flavors = {{"default", {}, {}, {}}};
  if (!gpu_class.empty()) c.resource_flavors[0].node_labels["taugrid.io/gpu-class"] = gpu_class;
  sched::ClusterQueue cq;
  cq.name = "default";
  cq.namespace_selector = sched::LabelSelector{};
  cq.resource_groups = {{{"cpu", "memory", "nvidia.com/gpu"},
                         {{"default",
                           {{"cpu", Quantity::FromMilli(capacity.cpus_milli), std::nullopt, std::nullopt},
                            {"memory", Quantity::FromUnits(capacity.memory_bytes, Quantity::Format::kBinary),
                             std::nullopt, std::nullopt},
                            {"nvidia.com/gpu", Quantity::FromUnits(capacity.gpus), std::nullopt, std::nullopt}}}}}};
  c.cluster_queues = {cq};
  c.local_queues = {{"default", "default", "default", "None"}};
  return c;
}

std::string DefaultKueueManifests(const sched::Resources& capacity, const std::string& gpu_class) {
  std::string labels = gpu_class.empty() ? "" : fmt::format("spec:\n  nodeLabels:\n    taugrid.io/gpu-class: {}\n", gpu_class);
  return fmt::format(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default
{}---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: default
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: "{}"
      - name: memory
        nominalQuota: "{}"
      - name: nvidia.com/gpu
        nominalQuota: "{}"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: default
  name: default
spec:
  clusterQueue: default
)",
                     labels, Quantity::FromMilli(capacity.cpus_milli).ToString(),
                     Quantity::FromUnits(capacity.memory_bytes, Quantity::Format::kBinary).ToString(), capacity.gpus);
}

Result<sched::KueueConfig> JobManager::DecodeObjects(const std::vector<store::KueueObjectRecord>& objects) {
  std::string text;
  for (const auto& o : objects) text += o.json + "\n---\n";
  render::DecodedKueueConfig decoded;
  spec::Diagnostics diags;
  if (!render::DecodeKueueManifests(text, "configuration", &decoded, &diags)) {
    return InvalidArgumentError(diags.Format());
  }
  return decoded.config;
}

Status JobManager::LoadKueue() {
  TAU_ASSIGN_OR_RETURN(kueue_objects_, store_->LoadKueueObjects());
  TAU_ASSIGN_OR_RETURN(std::string version, store_->Setting("kueue_config_version"));
  if (kueue_objects_.empty() && version.empty() && !options_.default_manifests.empty()) {
    render::DecodedKueueConfig decoded;
    spec::Diagnostics diags;
    if (!render::DecodeKueueManifests(options_.default_manifests, "default configuration", &decoded, &diags)) {
      return InternalError(diags.Format());
    }
    for (const auto& o : decoded.objects) kueue_objects_.push_back({o.kind, o.namespace_, o.name, o.json});
    TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
    TAU_RETURN_IF_ERROR(store_->ReplaceKueueObjects(kueue_objects_));
    TAU_RETURN_IF_ERROR(store_->SetSetting("kueue_config_version", "1"));
    TAU_RETURN_IF_ERROR(txn.Commit());
  }
  if (kueue_objects_.empty() && version.empty()) return Status::Ok();  // keep options_.kueue
  // What is stored was accepted when applied: a rule added since (a
  // combination Kueue refuses) warns instead of keeping the daemon down.
  std::string text;
  for (const auto& o : kueue_objects_) text += o.json + "\n---\n";
  render::DecodedKueueConfig decoded;
  spec::Diagnostics diags;
  if (!render::DecodeKueueManifests(text, "configuration", &decoded, &diags, render::KueueDecodeMode::kStored)) {
    return InvalidArgumentError(diags.Format());
  }
  if (!diags.items().empty()) log::Warn("jobs", "the stored Kueue configuration", {{"diagnostics", diags.Format()}});
  admission_->Configure(decoded.config);
  return Status::Ok();
}

Result<std::vector<std::string>> JobManager::ApplyKueue(const std::string& upserts,
                                                        const std::vector<KueueObjectKey>& deletes) {
  render::DecodedKueueConfig decoded;
  spec::Diagnostics diags;
  if (!upserts.empty() && !render::DecodeKueueManifests(upserts, "manifests", &decoded, &diags)) {
    return InvalidArgumentError(diags.Format());
  }
  std::vector<store::KueueObjectRecord> objects = kueue_objects_;
  std::vector<std::string> changes;
  auto find = [&](const std::string& kind, const std::string& ns, const std::string& name) {
    return std::find_if(objects.begin(), objects.end(), [&](const store::KueueObjectRecord& o) {
      return o.kind == kind && o.namespace_ == ns && o.name == name;
    });
  };
  for (const auto& o : decoded.objects) {
    auto it = find(o.kind, o.namespace_, o.name);
    std::string label = o.namespace_.empty() ? fmt::format("{}/{}", o.kind, o.name)
                                             : fmt::format("{}/{}/{}", o.kind, o.namespace_, o.name);
    if (it == objects.end()) {
      objects.push_back({o.kind, o.namespace_, o.name, o.json});
      changes.push_back(label + " created");
    } else if (it->json != o.json) {
      it->json = o.json;
      changes.push_back(label + " configured");
    } else {
      changes.push_back(label + " unchanged");
    }
  }
  for (const auto& key : deletes) {
    std::string ns = key.kind == "LocalQueue" && key.namespace_.empty() ? "default" : key.namespace_;
    auto it = find(key.kind, key.kind == "LocalQueue" ? ns : "", key.name);
    if (it == objects.end()) return NotFoundError(fmt::format("no {} named \"{}\"", key.kind, key.name));
    objects.erase(it);
    changes.push_back(fmt::format("{}/{} deleted", key.kind, key.name));
  }
  TAU_ASSIGN_OR_RETURN(sched::KueueConfig config, DecodeObjects(objects));
  TAU_ASSIGN_OR_RETURN(std::string version, store_->Setting("kueue_config_version"));
  {
    TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
    TAU_RETURN_IF_ERROR(store_->ReplaceKueueObjects(objects));
    TAU_RETURN_IF_ERROR(store_->SetSetting("kueue_config_version", std::to_string(std::atoll(version.c_str()) + 1)));
    TAU_RETURN_IF_ERROR(txn.Commit());
  }
  kueue_objects_ = std::move(objects);
  admission_->Configure(config);
  ScheduleAdmission();
  Publish();
  return changes;
}

std::string JobManager::QueuesJson() const {
  const sched::KueueConfig& config = admission_->Config();
  std::map<std::string, std::pair<int, int>> cq_counts, lq_counts;  // pending, admitted
  for (const auto& [seq, job] : jobs_by_seq_) {
    bool queued = job->rec.state == JobState::kQueued;
    bool admitted = job->rec.state == JobState::kAdmitted || job->rec.state == JobState::kRunning;
    if (!queued && !admitted) continue;
    for (const auto& lq : config.local_queues) {
      if (lq.namespace_ != job->rec.workspace || lq.name != job->rec.queue) continue;
      auto& c = cq_counts[lq.cluster_queue];
      auto& l = lq_counts[lq.namespace_ + "/" + lq.name];
      (queued ? c.first : c.second)++;
      (queued ? l.first : l.second)++;
    }
  }
  auto amount = [](const std::string& resource, int64_t milli) {
    return resource == "memory" ? Quantity::FromUnits(milli / 1000, Quantity::Format::kBinary).ToString()
                                : Quantity::FromMilli(milli).ToString();
  };
  nlohmann::json cqs = nlohmann::json::array();
  for (const auto& cq : config.cluster_queues) {
    nlohmann::json resources = nlohmann::json::array();
    for (const auto& g : cq.resource_groups) {
      for (const auto& f : g.flavors) {
        for (const auto& r : f.resources) {
          auto usage = admission_->ClusterQueueUsage(cq.name, {f.name, r.name});
          resources.push_back({{"flavor", f.name},
                               {"resource", r.name},
                               {"nominal", amount(r.name, r.nominal_quota.milli())},
                               {"used", usage ? amount(r.name, usage->used) : "0"},
                               {"borrowed", usage ? amount(r.name, usage->borrowed) : "0"}});
        }
      }
    }
    auto counts = cq_counts[cq.name];
    nlohmann::json share = nullptr;
    if (auto s = admission_->ClusterQueueShare(cq.name)) share = *s;
    cqs.push_back({{"name", cq.name},
                   {"weighted_share", share},
                   {"fair_sharing_weight", cq.fair_sharing_weight ? cq.fair_sharing_weight->ToString() : "1"},
                   {"cohort", cq.cohort_name},
                   {"queueing_strategy", cq.queueing_strategy},
                   {"pending", counts.first},
                   {"admitted", counts.second},
                   {"resources", resources}});
  }
  nlohmann::json lqs = nlohmann::json::array();
  for (const auto& lq : config.local_queues) {
    auto counts = lq_counts[lq.namespace_ + "/" + lq.name];
    lqs.push_back({{"workspace", lq.namespace_},
                   {"name", lq.name},
                   {"cluster_queue", lq.cluster_queue},
                   {"pending", counts.first},
                   {"admitted", counts.second}});
  }
  nlohmann::json cohorts = nlohmann::json::array();
  for (const auto& c : config.cohorts) {
    nlohmann::json share = nullptr;
    if (auto s = admission_->CohortShare(c.name)) share = *s;
    cohorts.push_back({{"name", c.name}, {"parent", c.parent_name}, {"weighted_share", share}});
  }
  return nlohmann::json({{"fair_sharing", config.fair_sharing.enable},
                         {"cluster_queues", cqs},
                         {"cohorts", cohorts},
                         {"local_queues", lqs}})
      .dump();
}

Result<std::string> JobManager::WhyJson(const std::string& id_or_name) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  nlohmann::json out = {{"id", job->rec.id},
                        {"name", job->rec.name},
                        {"state", store::JobStateName(job->rec.state)},
                        {"reason", job->rec.reason},
                        {"message", job->rec.message},
                        {"held", job->rec.held},
                        {"attempt", job->rec.attempt},
                        {"holders", nlohmann::json::array()}};
  // A job that runs waits for nothing: no pending reason, whatever an
  // older record says.
  if (job->rec.state == JobState::kAdmitted || job->rec.state == JobState::kRunning) {
    out["reason"] = "";
    out["message"] = "";
    return out.dump();
  }
  if (auto why = admission_->Why(job->rec.id)) {
    out["position"] = why->position;
    // How long a backoff has left, now rather than at the last pass.
    if (why->reason == "Backoff" && job->rec.retry_at) out["message"] = sched::BackoffMessage(*job->rec.retry_at - NowMs());
  }
  if (job->rec.state == JobState::kQueued) {
    for (const std::string& id : admission_->QuotaHolders(job->rec.id)) {
      auto it = jobs_by_id_.find(id);
      if (it == jobs_by_id_.end()) continue;
      const Job& h = *it->second;
      out["holders"].push_back({{"id", h.rec.id},
                                {"name", h.rec.name},
                                {"queue", h.rec.queue},
                                {"workspace", h.rec.workspace},
                                {"resources", sched::Describe(h.request)}});
    }
  }
  return out.dump();
}

Result<std::shared_ptr<const JobView>> JobManager::SetPriority(const std::string& id_or_name,
                                                               const std::string& priority_class) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  if (job->rec.state != JobState::kQueued) {
    return FailedPreconditionError(fmt::format("job {} is {}; only a queued job's priority can change", job->rec.id,
                                               store::JobStateName(job->rec.state)));
  }
  Job probe = *job;
  probe.view.reset();
  probe.rec.priority_class = priority_class;
  TAU_ASSIGN_OR_RETURN(sched::Workload w, ToWorkload(probe));  // the class must exist
  job->rec.priority_class = priority_class;
  {
    TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
    TAU_RETURN_IF_ERROR(SaveJob(*job));
    TAU_RETURN_IF_ERROR(AppendEvent(*job, "PriorityChanged", "", fmt::format("WorkloadPriorityClass {} ({})",
                                                                             priority_class, w.priority)));
    TAU_RETURN_IF_ERROR(txn.Commit());
  }
  admission_->Withdraw(job->rec.id);  // re-queued at its new place by the next pass
  ScheduleAdmission();
  Publish();
  return job->view;
}

Result<std::shared_ptr<const JobView>> JobManager::SetHeld(const std::string& id_or_name, bool held) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  if (job->rec.state != JobState::kQueued) {
    return FailedPreconditionError(fmt::format("job {} is {}; only queued jobs can be {}", job->rec.id,
                                               store::JobStateName(job->rec.state), held ? "held" : "released"));
  }
  if (job->rec.held != held) {
    job->rec.held = held;
    TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
    TAU_RETURN_IF_ERROR(SaveJob(*job));
    TAU_RETURN_IF_ERROR(AppendEvent(*job, held ? "Held" : "Released", "", held ? "kept in its queue, not admitted"
                                                                               : "may be admitted again"));
    TAU_RETURN_IF_ERROR(txn.Commit());
  }
  admission_->SetHeld(job->rec.id, held);
  ScheduleAdmission();
  Publish();
  return job->view;
}

Result<sched::Workload> JobManager::ToWorkload(const Job& job) const {
  const spec::JobSpec& s = job.spec;
  sched::Workload w;
  w.id = job.rec.id;
  w.namespace_ = job.rec.workspace;
  w.local_queue = job.rec.queue;
  w.seq = job.rec.seq;
  const std::string& priority = job.rec.priority_class.empty() ? s.priority : job.rec.priority_class;
  if (!priority.empty()) {
    bool found = false;
    for (const auto& pc : admission_->Config().priority_classes) {
      if (pc.name == priority) {
        w.priority = pc.value;
        found = true;
      }
    }
    if (!found) {
      return NotFoundError(fmt::format("WorkloadPriorityClass \"{}\" does not exist (see tau admin get "
                                       "WorkloadPriorityClass)", priority));
    }
  }
  w.per_pod = {{"cpu", s.compute.cpus.milli()}, {"memory", s.compute.memory.milli()}};
  if (s.compute.gpus > 0) {
    w.per_pod["nvidia.com/gpu"] = s.compute.gpus * 1000;
    w.tolerations.push_back({"nvidia.com/gpu", "Exists", "", "NoSchedule"});  // as render/pod_parts.cc gives GPU pods
  }
  w.count = s.compute.workers;
  if (s.compute.gpu_class != "any") w.node_selector["taugrid.io/gpu-class"] = s.compute.gpu_class;
  return w;
}

void JobManager::SetWaitingReason(Job& job, const std::string& reason, const std::string& message) {
  if (job.rec.reason == reason && job.rec.message == message) return;
  job.rec.reason = reason;
  job.rec.message = message;
  if (Status st = SaveJob(job); !st.ok()) LogStoreFailure(job, st);
}

// ---- admission and attempts ---------------------------------------------

void JobManager::ScheduleAdmission() {
  if (!options_.defer) {
    // No loop to come back on: the pass a deferred preemptor waits for runs
    // now (bounded; the engine's next pass makes that choice an ordinary one).
    RunAdmission();
    for (int again = 0; again < 4 && admission_->NeedsAnotherPass(); ++again) RunAdmission();
    Publish();
    return;
  }
  if (admission_scheduled_) return;
  admission_scheduled_ = true;
  options_.defer([this] {
    admission_scheduled_ = false;
    RunAdmission();
    Publish();
    // A preemptor waits on a workload this pass admitted: decide it on the
    // next loop turn rather than at some unrelated later event.
    if (admission_->NeedsAnotherPass()) ScheduleAdmission();
  });
}

// Whether a queued job's dependencies let it start: kReady, kWaiting (some
// have not ended; the job's reason says which), or kFailed (one failed, was
// cancelled or was removed: the job has been ended DependencyFailed).
JobManager::Dependencies JobManager::CheckDependencies(Job& job) {
  if (job.rec.depends_on.empty()) return Dependencies::kReady;
  std::vector<std::string> waiting;
  for (const std::string& id : Split(job.rec.depends_on, ',')) {
    // A dependency that ended may be in the database only.
    std::optional<store::JobRecord> stored;
    const store::JobRecord* dep = nullptr;
    if (auto it = jobs_by_id_.find(id); it != jobs_by_id_.end()) {
      dep = &it->second->rec;
    } else if (auto loaded = store_->LoadJob(id); !loaded.ok()) {
      LogStoreFailure(job, loaded.status());
      waiting.push_back(fmt::format("{} (unreadable)", id));
      continue;
    } else if (*loaded) {
      stored = std::move(*loaded);
      dep = &*stored;
    }
    std::string failure;
    if (!dep) {
      failure = fmt::format("dependency {} was removed before it was seen to succeed", id);
    } else if (dep->state == JobState::kFailed || dep->state == JobState::kCancelled) {
      failure = fmt::format("dependency {} ({}) ended {}", id, dep->name, store::JobStateName(dep->state));
    } else if (dep->state != JobState::kSucceeded) {
      waiting.push_back(fmt::format("{} ({})", id, dep->name));
      continue;
    } else {
      continue;
    }
    job.rec.state = JobState::kFailed;
    job.rec.reason = "DependencyFailed";
    job.rec.message = failure;
    job.rec.finished_at = NowMs();
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(job);
    if (st.ok()) st = AppendEvent(job, "Failed", "DependencyFailed", failure);
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) LogStoreFailure(job, st);
    SealEvidence(job);
    return Dependencies::kFailed;
  }
  if (waiting.empty()) {
    if (job.rec.reason == "WaitingForDependencies") {
      job.rec.reason.clear();
      job.rec.message.clear();
      if (Status st = SaveJob(job); !st.ok()) LogStoreFailure(job, st);
    }
    return Dependencies::kReady;
  }
  std::string message = "waiting for " + Join(waiting, ", ");
  if (job.rec.reason != "WaitingForDependencies" || job.rec.message != message) {
    job.rec.reason = "WaitingForDependencies";
    job.rec.message = message;
    if (Status st = SaveJob(job); !st.ok()) LogStoreFailure(job, st);
  }
  return Dependencies::kWaiting;
}

namespace {

// The admission-fair-sharing history as stored in the settings table.
std::string HistoryToJson(const sched::AdmissionEngine::LocalQueueHistory& h) {
  nlohmann::json queues = nlohmann::json::array();
  for (const auto& [key, consumed] : h.consumed) queues.push_back({key.first, key.second, consumed});
  return nlohmann::json{{"last_sample_ms", h.last_sample_ms}, {"local_queues", queues}}.dump();
}

sched::AdmissionEngine::LocalQueueHistory HistoryFromJson(const std::string& text) {
  sched::AdmissionEngine::LocalQueueHistory h;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return h;
  h.last_sample_ms = j.value("last_sample_ms", int64_t{-1});
  if (j.contains("local_queues") && j["local_queues"].is_array()) {
    for (const auto& q : j["local_queues"]) {
      if (q.is_array() && q.size() == 3 && q[0].is_string() && q[1].is_string() && q[2].is_number()) {
        h.consumed[{q[0].get<std::string>(), q[1].get<std::string>()}] = q[2].get<double>();
      }
    }
  }
  return h;
}

}  // namespace

void JobManager::RestoreAdmissionFairSharing() {
  auto stored = store_->Setting("admission_fair_sharing");
  if (stored.ok() && !stored->empty()) {
    auto history = HistoryFromJson(*stored);
    admission_->RestoreFairSharingHistory(history);
    afs_saved_sample_ms_ = history.last_sample_ms;
  }
}

void JobManager::RunAdmission() {
  admission_->SetNow(NowMs());  // admission fair sharing decays usage with time
  // Queued jobs whose dependencies allow it enter the engine's queues.
  // In submission order, so a job failed here fails its dependents (which
  // were submitted later) in the same pass.
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (job->rec.state != JobState::kQueued) continue;
    if (CheckDependencies(*job) != Dependencies::kReady) continue;
    if (admission_->Knows(job->rec.id)) continue;
    auto w = ToWorkload(*job);
    // The executor makes what the attempt needs before admission sees it
    // (on Kubernetes: the suspended objects Kueue queues).
    if (w.ok()) {
      if (Status prepared = PrepareAttempt(*job); !prepared.ok()) {
        SetWaitingReason(*job, "PrepareFailed", prepared.message());
        continue;
      }
    }
    Status st = w.ok() ? admission_->Enqueue(*w) : w.status();
    if (st.ok() && job->rec.held) admission_->SetHeld(job->rec.id, true);
    // Requeued after an eviction: not admitted before its backoff ends.
    if (st.ok() && job->rec.retry_at) admission_->SetBackoff(job->rec.id, *job->rec.retry_at);
    // The configuration changed since it was accepted: it waits until the
    // queue, class or quota it needs exists again.
    if (!st.ok()) SetWaitingReason(*job, st.code() == StatusCode::kNotFound ? "QueueNotFound" : "ExceedsMaxQuota",
                                   st.message());
  }
  // Kueue's quota decides the order; the machine's free capacity is a hard
  // bound on top of it (quota may promise more than exists).
  sched::Resources free = options_.capacity;
  free -= used_;
  free.gpus = 0;  // the GPUs that can take work now: free, healthy, not drained
  for (size_t g = 0; g < gpu_busy_.size(); ++g) free.gpus += GpuUsable(g) ? 1 : 0;
  std::vector<sched::Admission> admissions = admission_->Admit();
  ArmBackoffTimer();  // the pass that admits what backed off, when it may
  std::set<std::string> not_to_start;
  for (const sched::Eviction& ev : admission_->TakeEvictions()) {
    auto it = jobs_by_id_.find(ev.victim_id);
    if (it == jobs_by_id_.end() || !it->second->rec.preempted_by.empty()) continue;
    Job& victim = *it->second;
    if (victim.rec.state != JobState::kAdmitted && victim.rec.state != JobState::kRunning) {
      // Nothing runs to stop (the engine never evicts what it admits in
      // the same pass; this keeps a job from running marked preempted if
      // it ever did): it gives its quota back and stays queued.
      admission_->Withdraw(victim.rec.id);
      not_to_start.insert(victim.rec.id);
      continue;
    }
    Count("taugrid_preemptions_total", {{"reason", ev.reason}});
    victim.rec.preempted_by = !ev.preemptor_id.empty()            ? ev.preemptor_id
                              : ev.reason == "LocalQueueStopped" ? "its LocalQueue's stopPolicy HoldAndDrain"
                                                                 : "its ClusterQueue's stopPolicy HoldAndDrain";
    std::string message = fmt::format("preempted by {} ({}); SIGTERM sent, SIGKILL after {}", victim.rec.preempted_by,
                                      ev.reason, FormatDuration(victim.spec.checkpoint.grace_period));
    // Recorded before the signal, so that a restart in between still
    // requeues the attempt rather than calling its end a failure.
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(victim);
    if (st.ok()) st = AppendEvent(victim, "Preempted", "Preempted", message);
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) LogStoreFailure(victim, st);
    StopRanks(victim);
  }
  for (const sched::Admission& a : admissions) {
    if (not_to_start.count(a.workload_id)) continue;
    Job& job = *jobs_by_id_[a.workload_id];
    if (options_.runs_locally &&
        (!job.request.FitsIn(free) || UsableGpus(job.spec.compute.gpu_class) < job.request.gpus)) {
      admission_->Withdraw(job.rec.id);  // back to the queue (same place: ordered by priority and seq)
      std::string shortage = GpuShortage(job.request.gpus);
      SetWaitingReason(job, "WaitingForResources",
                       !shortage.empty() ? shortage
                                         : fmt::format("quota admits it, but the machine has {} free and it needs {}",
                                                       sched::Describe(free), sched::Describe(job.request)));
      continue;
    }
    free -= job.request;
    StartAttempt(job, a);
  }
  // Keep the sampled usage across restarts, once per sample.
  if (auto history = admission_->FairSharingHistory();
      !history.consumed.empty() && history.last_sample_ms != afs_saved_sample_ms_) {
    if (Status st = store_->SetSetting("admission_fair_sharing", HistoryToJson(history)); st.ok()) {
      afs_saved_sample_ms_ = history.last_sample_ms;
    }
  }
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (job->rec.state != JobState::kQueued || !admission_->Knows(job->rec.id)) continue;
    if (auto why = admission_->Why(job->rec.id)) {
      std::string message = why->message;
      if (why->position > 0) message += fmt::format(" (position {} in its queue)", why->position);
      if (job->rec.reason != "WaitingForResources" || why->reason != "WaitingForQuota") {
        SetWaitingReason(*job, why->reason, message);
      }
    }
  }
}

}  // namespace tau::server
