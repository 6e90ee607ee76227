// The memo in front of flavor assignment (AdmissionEngine::AssignFlavors):
// workloads of the same shape in the same ClusterQueue get the same flavors
// and the same verdict while usage in the queue's cohort tree is unchanged.

#include <string>

#include "sched/admission_engine.h"

namespace tau::sched {
namespace {

// Everything of a workload that flavor assignment reads, except what only
// a victim search reads (its id and priority; such answers are not kept).
std::string ShapeKey(QuotaTree::NodeId node, const Workload& w, bool simulate_preemption) {
  std::string key;
  key.reserve(64);
  auto number = [&](int64_t n) {
    key += std::to_string(n);
    key += ';';
  };
  // Lengths before strings, so that no value can imitate a separator.
  auto text = [&](const std::string& s) {
    number(static_cast<int64_t>(s.size()));
    key += s;
  };
  number(node);
  number(simulate_preemption ? 1 : 0);
  number(w.count);
  number(static_cast<int64_t>(w.per_pod.size()));
  for (const auto& [resource, amount] : w.per_pod) {
    text(resource);
    number(amount);
  }
  number(static_cast<int64_t>(w.node_selector.size()));
  for (const auto& [k, v] : w.node_selector) {
    text(k);
    text(v);
  }
  for (const Toleration& t : w.tolerations) {
    text(t.key);
    text(t.op);
    text(t.value);
    text(t.effect);
  }
  return key;
}

// Bounds the memo: shapes seen under older versions pile up otherwise.
constexpr size_t kMaxCachedChoices = 1 << 14;

}  // namespace

AdmissionEngine::Choice AdmissionEngine::AssignFlavors(const QueueState& q, const Workload& w,
                                                       bool simulate_preemption) const {
  if (!incremental_) {
    bool consulted_victims = false;
    return ComputeFlavors(q, w, simulate_preemption, &consulted_victims);
  }
  const uint64_t version = tree_.Version(q.node);
  std::string key = ShapeKey(q.node, w, simulate_preemption);
  if (auto it = choice_cache_.find(key); it != choice_cache_.end() && it->second.tree_version == version) {
    Choice c = it->second.choice;
    c.admission.workload_id = w.id;
    return c;
  }
  bool consulted_victims = false;
  Choice c = ComputeFlavors(q, w, simulate_preemption, &consulted_victims);
  if (!consulted_victims) {
    if (choice_cache_.size() >= kMaxCachedChoices) choice_cache_.clear();
    choice_cache_[std::move(key)] = {version, c};
  }
  return c;
}

}  // namespace tau::sched
