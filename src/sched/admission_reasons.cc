// Why a pending workload waits (AdmissionEngine::Why: from what the last
// pass that decided its cohort tree left, not stored per workload by that
// pass) and who holds the quota it needs (QuotaHolders: the admitted
// workloads now), both answered on demand.

#include <fmt/format.h>

#include "sched/admission_engine.h"
#include "sched/requeue_backoff.h"

namespace tau::sched {

std::vector<std::string> AdmissionEngine::QuotaHolders(const std::string& id) const {
  auto wit = workloads_.find(id);
  if (wit == workloads_.end()) return {};
  PendingInfo why;
  auto cq = ClusterQueueOf(wit->second, &why);
  if (!cq) return {};
  const QueueState& q = queues_.at(*cq);
  auto root_of = [&](QuotaTree::NodeId n) {
    while (auto p = tree_.Parent(n)) n = *p;
    return n;
  };
  const QuotaTree::NodeId root = root_of(q.node);
  // Every flavor it could use for a resource it asks for.
  std::set<FlavorResource> wanted;
  for (const auto& g : q.spec->resource_groups) {
    for (const auto& f : g.flavors) {
      for (const auto& r : g.covered_resources) {
        auto it = wit->second.per_pod.find(r);
        if (it != wit->second.per_pod.end() && it->second > 0) wanted.insert({f.name, r});
      }
    }
  }
  std::vector<std::string> holders;
  for (const auto& [admitted_id, a] : admitted_) {
    auto node = ClusterQueueNode(a.cluster_queue);
    if (!node || root_of(*node) != root) continue;
    for (const auto& [fr, amount] : a.usage) {
      if (amount > 0 && wanted.count(fr)) {
        holders.push_back(admitted_id);
        break;
      }
    }
  }
  return holders;
}

std::optional<PendingInfo> AdmissionEngine::Why(const std::string& id) const {
  auto w = workloads_.find(id);
  if (w == workloads_.end() || admitted_.count(id)) return std::nullopt;
  PendingInfo none;
  auto cq = ClusterQueueOf(w->second, &none);
  if (!cq) return std::nullopt;
  const QueueState& q = queues_.at(*cq);
  const size_t position = q.pending.Position(id);
  auto decided = decided_pass_.find(q.root);
  auto queued = enqueued_pass_.find(id);
  if (position == 0 || decided == decided_pass_.end() || queued == enqueued_pass_.end() ||
      queued->second >= decided->second) {
    return std::nullopt;
  }
  PendingInfo info;
  info.position = static_cast<int>(position);
  if (held_.count(id)) {
    info.reason = "Held";
    info.message = "held by a user (tau release to let it run)";
  } else if (auto b = backoff_until_.find(id); b != backoff_until_.end() && last_pass_now_ && b->second > *last_pass_now_) {
    info.reason = "Backoff";
    info.message = BackoffMessage(b->second - *last_pass_now_);
  } else if (!q.inactive_reason.empty()) {
    info.reason = "ClusterQueueInactive";
    info.message = q.inactive_reason;
  } else if (q.spec->stop_policy != "None") {
    info.reason = "ClusterQueueStopped";
    info.message = fmt::format("ClusterQueue \"{}\" has stopPolicy {}", *cq, q.spec->stop_policy);
  } else if (const LocalQueue* lq = has_stopped_local_queue_ ? LocalQueueOf(w->second) : nullptr;
             lq && lq->stop_policy != "None") {
    info.reason = "LocalQueueStopped";
    info.message = fmt::format("LocalQueue {}/{} is inactive: it has stopPolicy {}", lq->namespace_, lq->name,
                               lq->stop_policy);
  } else if (auto v = verdicts_.find(id); v != verdicts_.end() && v->second.pass == decided->second) {
    info.reason = v->second.reason;
    info.message = v->second.Message();
  } else if (const ShapeVerdict* sv = TimelineVerdict(q, id, decided->second)) {
    info.reason = sv->choice->reason;
    info.message = sv->choice->message.Text();
  } else {
    // Not reached by the pass: behind the queue's head (a blocked StrictFIFO head).
    info.reason = "WaitingForQuota";
    info.message = fmt::format("behind {} in ClusterQueue \"{}\" ({})", q.pending.begin()->id, *cq,
                               q.spec->queueing_strategy);
  }
  return info;
}

}  // namespace tau::sched
