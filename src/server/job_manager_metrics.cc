// Metrics of the control plane (docs/observability.md): events are counted
// where they happen; state is read into gauges before each scrape.

#include <fmt/format.h>

#include "common/log.h"
#include "gpu/gpu_metrics.h"
#include "server/job_manager.h"

namespace tau::server {
using metrics::Registry;
using store::JobState;

namespace {

// Gauges read from the job manager's state before each scrape
// (CollectMetrics resets them all, then sets what the state says).
struct StateGauge {
  const char* name;
  const char* help;
  Registry::Type type = Registry::Type::kGauge;  // a counter mirrors one kept elsewhere
};
constexpr StateGauge kStateGauges[] = {
    {"taugrid_jobs", "Jobs by state, queue and workspace (finished ones included until removed)."},
    {"taugrid_jobs_stalled", "Running jobs whose progress is stalled now."},
    {"taugrid_cluster_queue_pending_jobs", "Jobs waiting in a ClusterQueue."},
    {"taugrid_cluster_queue_admitted_jobs", "Jobs admitted (running) in a ClusterQueue."},
    {"taugrid_local_queue_pending_jobs", "Jobs waiting in a LocalQueue."},
    {"taugrid_cluster_queue_nominal_quota",
     "Nominal quota of a ClusterQueue per flavor and resource (cores, bytes, GPUs)."},
    {"taugrid_cluster_queue_resource_usage",
     "Quota in use in a ClusterQueue per flavor and resource (cores, bytes, GPUs)."},
    {"taugrid_cluster_queue_borrowed", "Quota a ClusterQueue borrows from its cohort per flavor and resource."},
};

}  // namespace

void DefineMetrics(Registry& r, const std::string& version) {
  using T = Registry::Type;
  r.Define("taugrid_build_info", T::kGauge, "Always 1; the version of taugridd in a label.");
  r.Set("taugrid_build_info", {{"version", version}}, 1);
  r.Define("taugrid_job_submissions_total", T::kCounter, "Jobs submitted, by workspace and queue.");
  r.Define("taugrid_job_attempts_total", T::kCounter, "Attempts that ended, by the reason they ended.");
  r.Define("taugrid_preemptions_total", T::kCounter, "Attempts preempted by the admission engine, by reason.");
  r.Define("taugrid_admission_wait_seconds", T::kHistogram, "Time from submit to the first admission.",
           Registry::SecondsBuckets());
  r.Define("taugrid_job_start_seconds", T::kHistogram, "Time from an attempt's admission to its processes running.",
           Registry::SecondsBuckets());
  r.Define("taugrid_job_progress_stalls_total", T::kCounter,
           "Running jobs whose TAU_METRICS_FILE got no line for longer than the stall time.");
  r.Define("taugrid_api_request_duration_seconds", T::kHistogram, "HTTP API requests by route, method and status.",
           Registry::SecondsBuckets());
  for (const StateGauge& g : kStateGauges) r.Define(g.name, g.type, g.help);
  gpu::DefineGpuMetrics(r);
}

void JobManager::Count(const std::string& name, const metrics::Labels& labels, double delta) {
  if (options_.metrics) options_.metrics->Add(name, labels, delta);
}

void JobManager::ObserveSeconds(const std::string& name, const metrics::Labels& labels, int64_t ms) {
  if (options_.metrics) options_.metrics->Observe(name, labels, static_cast<double>(std::max<int64_t>(0, ms)) / 1000.0);
}

void JobManager::CollectMetrics() {
  Registry* r = options_.metrics;
  if (!r) return;
  for (const StateGauge& g : kStateGauges) r->Reset(g.name);
  gpu::ResetGpuMetrics(*r);
  // Jobs.
  std::map<metrics::Labels, int> jobs;
  const sched::KueueConfig& config = admission_->Config();
  std::map<std::string, int> cq_pending, cq_admitted;
  std::map<std::pair<std::string, std::string>, int> lq_pending;
  // Ended jobs are counted in the database (jobs_by_state_queue index);
  // the loop holds only some of them.
  if (auto ended = store_->CountEndedJobs(); ended.ok()) {
    for (const auto& c : *ended) {
      jobs[{{"state", std::string(store::JobStateName(c.state))}, {"queue", c.queue}, {"workspace", c.workspace}}] +=
          static_cast<int>(c.count);
    }
  } else {
    log::Warn("metrics", "cannot count ended jobs", {{"error", ended.status().ToString()}});
  }
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (store::IsTerminal(job->rec.state)) continue;
    ++jobs[{{"state", std::string(store::JobStateName(job->rec.state))},
            {"queue", job->rec.queue},
            {"workspace", job->rec.workspace}}];
    const bool queued = job->rec.state == JobState::kQueued || job->rec.state == JobState::kRetrying;
    const bool admitted = job->rec.state == JobState::kAdmitted || job->rec.state == JobState::kRunning;
    if (!queued && !admitted) continue;
    for (const auto& lq : config.local_queues) {
      if (lq.namespace_ != job->rec.workspace || lq.name != job->rec.queue) continue;
      (queued ? cq_pending : cq_admitted)[lq.cluster_queue]++;
      if (queued) lq_pending[{lq.namespace_, lq.name}]++;
    }
  }
  for (const auto& [labels, n] : jobs) r->Set("taugrid_jobs", labels, n);
  int stalled = 0;
  for (const auto& [seq, job] : jobs_by_seq_) stalled += job->progress_stalled ? 1 : 0;
  r->Set("taugrid_jobs_stalled", {}, stalled);
  // Queues and quota, in base units: cores, bytes, GPUs.
  for (const auto& cq : config.cluster_queues) {
    r->Set("taugrid_cluster_queue_pending_jobs", {{"cluster_queue", cq.name}}, cq_pending[cq.name]);
    r->Set("taugrid_cluster_queue_admitted_jobs", {{"cluster_queue", cq.name}}, cq_admitted[cq.name]);
    for (const auto& g : cq.resource_groups) {
      for (const auto& f : g.flavors) {
        for (const auto& res : f.resources) {
          metrics::Labels labels = {{"cluster_queue", cq.name}, {"flavor", f.name}, {"resource", res.name}};
          const double scale = 1.0 / 1000;  // quantities are kept in milli-units
          auto usage = admission_->ClusterQueueUsage(cq.name, {f.name, res.name});
          r->Set("taugrid_cluster_queue_nominal_quota", labels, static_cast<double>(res.nominal_quota.milli()) * scale);
          r->Set("taugrid_cluster_queue_resource_usage", labels, usage ? static_cast<double>(usage->used) * scale : 0);
          r->Set("taugrid_cluster_queue_borrowed", labels, usage ? static_cast<double>(usage->borrowed) * scale : 0);
        }
      }
    }
  }
  for (const auto& lq : config.local_queues) {
    r->Set("taugrid_local_queue_pending_jobs", {{"workspace", lq.namespace_}, {"local_queue", lq.name}},
           lq_pending[{lq.namespace_, lq.name}]);
  }
  // GPUs, with dcgm-exporter's labels.
  for (size_t g = 0; g < gpu_slots_.size(); ++g) {
    gpu::SetGpuMetrics(*r, static_cast<int>(g), g < options_.gpu_info.size() ? &options_.gpu_info[g] : nullptr,
                       options_.hostname, gpu_slots_[g].health.state(), gpu_slots_[g].health.last_sample(),
                       g < last_xid_.size() ? last_xid_[g] : 0);
  }
}

}  // namespace tau::server
