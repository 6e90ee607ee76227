// The memo in front of flavor assignment (AdmissionEngine::AssignFlavors):
// workloads of the same shape in the same ClusterQueue get the same flavors
// and the same verdict while usage in the queue's cohort tree is unchanged.

#include <charconv>
#include <string>

#include "sched/admission_engine.h"

namespace tau::sched {
namespace {

void Number(std::string& key, int64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  key.append(buf, end);
  key += ';';
}

}  // namespace

std::string AdmissionEngine::ShapeOf(const Workload& w) {
  std::string key;
  key.reserve(48);
  auto number = [&](int64_t n) { Number(key, n); };
  // Lengths before strings and counts before lists, so that no value can
  // imitate a separator.
  auto text = [&](const std::string& s) {
    number(static_cast<int64_t>(s.size()));
    key += s;
  };
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
  number(static_cast<int64_t>(w.tolerations.size()));
  for (const Toleration& t : w.tolerations) {
    text(t.key);
    text(t.op);
    text(t.value);
    text(t.effect);
  }
  return key;
}

namespace {

// Bounds a queue's memo: shapes seen under older versions pile up otherwise.
constexpr size_t kMaxCachedChoices = 256;

}  // namespace

AdmissionEngine::ChoiceRef AdmissionEngine::AssignFlavors(const QueueState& q, const Workload& w,
                                                          bool simulate_preemption) const {
  if (!incremental_) {
    bool consulted_victims = false;
    return std::make_shared<const Choice>(ComputeFlavors(q, w, simulate_preemption, &consulted_victims));
  }
  return AssignFlavorsOfShape(q, w, simulate_preemption, ShapeOf(w));
}

AdmissionEngine::ChoiceRef AdmissionEngine::AssignFlavorsOfShape(const QueueState& q, const Workload& w,
                                                                 bool simulate_preemption,
                                                                 const std::string& shape) const {
  bool consulted_victims = false;
  if (!incremental_) return std::make_shared<const Choice>(ComputeFlavors(q, w, simulate_preemption, &consulted_victims));
  const uint64_t version = tree_.Version(q.node);
  ChoiceMemo& memo = q.memo[simulate_preemption ? 1 : 0];
  auto it = memo.find(std::string_view(shape));
  if (it != memo.end() && it->second.tree_version == version) return it->second.choice;
  auto c = std::make_shared<const Choice>(ComputeFlavors(q, w, simulate_preemption, &consulted_victims));
  if (!consulted_victims) {
    if (it != memo.end()) {
      it->second = {version, c};
    } else {
      if (memo.size() >= kMaxCachedChoices) memo.clear();
      memo.emplace(shape, CachedChoice{version, c});
    }
  }
  return c;
}

}  // namespace tau::sched
