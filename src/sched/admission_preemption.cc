// Classical preemption in the admission engine (kueue-semantics §1.6,
// docs/queueing.md#preemption): which admitted workloads may make room for
// a pending one, and the fewest of them that do.

#include <algorithm>

#include "sched/admission_engine.h"

namespace tau::sched {

std::set<FlavorResource> AdmissionEngine::NeedingPreemption(const QueueState& q,
                                                            const FlavorResourceAmounts& usage) const {
  std::set<FlavorResource> need;
  for (const auto& [fr, amount] : usage) {
    if (amount > 0 && tree_.Available(q.node, fr) < amount) need.insert(fr);
  }
  return need;
}

bool AdmissionEngine::FitsQuota(const QueueState& q, const FlavorResourceAmounts& usage, bool allow_borrowing) const {
  for (const auto& [fr, amount] : usage) {
    if (amount > tree_.Available(q.node, fr)) return false;
    if (!allow_borrowing && tree_.Usage(q.node, fr) + amount > tree_.SubtreeQuota(q.node, fr)) return false;
  }
  return true;
}

bool AdmissionEngine::CandidateValid(const VictimCandidate& c, const std::set<FlavorResource>& need,
                                     bool allow_borrowing) const {
  if (c.own) return true;
  if (allow_borrowing && !c.while_borrowing && !c.hierarchical) return false;
  auto over_quota = [&](QuotaTree::NodeId node) {
    for (const FlavorResource& fr : need) {
      if (tree_.Usage(node, fr) > tree_.SubtreeQuota(node, fr)) return true;
    }
    return false;
  };
  for (std::optional<QuotaTree::NodeId> node = c.node; node && *node != c.common; node = tree_.Parent(*node)) {
    if (!over_quota(*node)) return false;
  }
  return true;
}

std::vector<Eviction> AdmissionEngine::FindVictims(const QueueState& q, const Workload& w,
                                                   const FlavorResourceAmounts& usage) {
  const Preemption& p = q.spec->preemption;
  if (p.within_cluster_queue == "Never" && p.reclaim_within_cohort == "Never") return {};
  // The victims of this pass's preemptors count as gone (they are no
  // candidates again); if that is enough, there is nothing to preempt, and
  // the workload waits for them to stop.
  ReleaseWhileDeciding(pass_victims_, true);
  std::vector<Eviction> victims = FindVictimsAmongOthers(q, w, usage);
  ReleaseWhileDeciding(pass_victims_, false);
  return victims;
}

FlavorResourceAmounts AdmissionEngine::ReservationWithoutVictims(const QueueState& q, const Admission& a) const {
  FlavorResourceAmounts reserved;
  if (q.spec->preemption.reclaim_within_cohort == "Any") return reserved;
  auto borrowing_limit = [&](const FlavorResource& fr) -> std::optional<int64_t> {
    for (const auto& g : q.spec->resource_groups) {
      for (const auto& f : g.flavors) {
        if (f.name != fr.flavor) continue;
        for (const auto& r : f.resources) {
          if (r.name == fr.resource && r.borrowing_limit) return r.borrowing_limit->milli();
        }
      }
    }
    return std::nullopt;
  };
  for (const auto& [fr, amount] : a.usage) {
    const int64_t nominal = tree_.SubtreeQuota(q.node, fr);
    const int64_t used = tree_.Usage(q.node, fr);
    int64_t hold;
    if (a.borrowing_level > 0) {
      const std::optional<int64_t> limit = borrowing_limit(fr);
      hold = limit ? std::min(amount, nominal + *limit - used) : amount;
    } else {
      hold = std::min(amount, nominal - used);
    }
    if (hold > 0) reserved[fr] = hold;
  }
  return reserved;
}

std::vector<Eviction> AdmissionEngine::FindVictimsForPass(const QueueState& q, const Workload& w,
                                                          const FlavorResourceAmounts& usage, bool* deferred) {
  std::vector<Eviction> victims = FindVictims(q, w, usage);
  // Kueue's cycle chooses among everything admitted before it, so the
  // workloads admitted by this pass's earlier cycles are candidates like
  // any other (left out, they would keep their ClusterQueue over its
  // quota and let larger workloads there be taken instead). The pass never
  // evicts what it admitted: when Kueue's choice includes one, the workload
  // waits for the next pass, where the same choice is an ordinary one.
  for (const Eviction& v : victims) {
    if (pass_admitted_.count(v.victim_id)) {
      needs_another_pass_ = true;
      if (deferred) *deferred = true;
      return {};
    }
  }
  return victims;
}

std::vector<Eviction> AdmissionEngine::FindVictimsAmongOthers(const QueueState& q, const Workload& w,
                                                              const FlavorResourceAmounts& usage) {
  const Preemption& p = q.spec->preemption;
  const std::set<FlavorResource> need = NeedingPreemption(q, usage);
  if (need.empty()) return {};
  // The preemptor's ClusterQueue and its Cohorts, nearest first.
  std::vector<QuotaTree::NodeId> ancestors;
  for (std::optional<QuotaTree::NodeId> n = q.node; n; n = tree_.Parent(*n)) ancestors.push_back(*n);
  auto common_ancestor = [&](QuotaTree::NodeId node) -> std::optional<QuotaTree::NodeId> {
    for (std::optional<QuotaTree::NodeId> n = node; n; n = tree_.Parent(*n)) {
      if (std::find(ancestors.begin(), ancestors.end(), *n) != ancestors.end()) return *n;
    }
    return std::nullopt;  // another cohort tree
  };
  // Fair sharing's candidates (Kueue's findCandidates): the preemptor's
  // queue's by withinClusterQueue, any other queue's of the tree by
  // reclaimWithinCohort; classical preemption collects its own below.
  std::vector<VictimCandidate> candidates;
  for (const auto& [id, a] : admitted_) {
    if (pass_victims_.count(id)) continue;
    bool uses = false;
    for (const auto& [fr, amount] : a.usage) uses = uses || (amount > 0 && need.count(fr));
    if (!uses) continue;
    auto vq = queues_.find(a.cluster_queue);
    if (vq == queues_.end()) continue;
    const Workload& v = workloads_.at(id);
    VictimCandidate c{id, vq->second.node == q.node, evicting_.count(id) > 0, false, v.priority,
                      admitted_order_.count(id) ? admitted_order_.at(id) : 0, vq->second.node, q.node};
    if (c.own) {
      const bool lower = v.priority < w.priority;
      if (!(p.within_cluster_queue == "LowerPriority" && lower) &&
          !(p.within_cluster_queue == "LowerOrNewerEqualPriority" &&
            (lower || (v.priority == w.priority && v.seq > w.seq)))) {
        continue;
      }
    } else {
      auto common = common_ancestor(vq->second.node);
      if (!common || p.reclaim_within_cohort == "Never") continue;
      if (p.reclaim_within_cohort == "LowerPriority" && v.priority >= w.priority) continue;
      c.common = *common;
      c.while_borrowing = p.borrow_within_cohort == "LowerPriority" && v.priority < w.priority &&
                          (!p.max_priority_threshold || v.priority <= *p.max_priority_threshold);
    }
    candidates.push_back(c);
  }
  // Kueue's candidate order: already evicting first, then other
  // ClusterQueues' workloads, lower priority, the most recently admitted.
  std::sort(candidates.begin(), candidates.end(), [](const VictimCandidate& a, const VictimCandidate& b) {
    if (a.evicting != b.evicting) return a.evicting;
    if (a.own != b.own) return !a.own;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.admitted != b.admitted) return a.admitted > b.admitted;
    return a.id < b.id;
  });
  const bool others = std::any_of(candidates.begin(), candidates.end(), [](const auto& c) { return !c.own; });
  if (others && FairSharing()) return FindFairVictims(q, w, usage, candidates, need);
  // Classical preemption walks the cohort tree as Kueue's hierarchical
  // preemption does.
  bool hierarchical = false;
  const std::vector<VictimCandidate> ordered = ClassicalCandidates(q, w, usage, need, &hierarchical);
  const bool from_others = std::any_of(ordered.begin(), ordered.end(), [](const auto& c) { return !c.own; });
  // Which runs to try, borrowing allowed or not, in Kueue's order: another
  // queue's workload without the hierarchical advantage is reclaimed only
  // while the preemptor stays within its nominal quota, unless
  // borrowWithinCohort allows it.
  bool under_nominal = true;
  for (const FlavorResource& fr : need) under_nominal = under_nominal && tree_.Usage(q.node, fr) < tree_.SubtreeQuota(q.node, fr);
  const bool borrow_within_cohort = p.borrow_within_cohort == "LowerPriority";
  std::vector<bool> runs;
  if (!from_others || (!borrow_within_cohort && !under_nominal)) runs = {true};
  else if (!borrow_within_cohort && !hierarchical) runs = {false, true};
  else runs = {true, false};
  for (bool allow_borrowing : runs) {
    auto victims = SelectVictims(q, w, usage, ordered, need, allow_borrowing);
    if (!victims.empty()) return victims;
  }
  return {};
}

std::vector<AdmissionEngine::VictimCandidate> AdmissionEngine::ClassicalCandidates(
    const QueueState& q, const Workload& w, const FlavorResourceAmounts& usage, const std::set<FlavorResource>& need,
    bool* hierarchical) const {
  const Preemption& p = q.spec->preemption;
  auto within_quota = [&](QuotaTree::NodeId node) {
    for (const FlavorResource& fr : need) {
      if (tree_.Usage(node, fr) > tree_.SubtreeQuota(node, fr)) return false;
    }
    return true;
  };
  // Kueue's QuantitiesFitInQuota: whether `remaining` fits the node's
  // subtree quota now; `remaining` becomes what its unused local quota
  // does not cover, for the next node up.
  auto fits_in_quota = [&](QuotaTree::NodeId node, FlavorResourceAmounts& remaining) {
    bool fits = true;
    for (auto& [fr, amount] : remaining) {
      if (tree_.Usage(node, fr) + amount > tree_.SubtreeQuota(node, fr)) fits = false;
      amount = std::max<int64_t>(0, amount - std::max<int64_t>(0, tree_.LocalQuota(node, fr) - tree_.Usage(node, fr)));
    }
    return fits;
  };
  auto candidate = [&](const std::string& id, QuotaTree::NodeId node, QuotaTree::NodeId common,
                       bool advantage) -> std::optional<VictimCandidate> {
    if (pass_victims_.count(id)) return std::nullopt;
    const Admission& a = admitted_.at(id);
    bool uses = false;
    for (const auto& [fr, amount] : a.usage) uses = uses || (amount > 0 && need.count(fr));
    if (!uses) return std::nullopt;
    const Workload& v = workloads_.at(id);
    VictimCandidate c{id, node == q.node, evicting_.count(id) > 0, false, v.priority,
                      admitted_order_.count(id) ? admitted_order_.at(id) : 0, node, common};
    if (c.own) {
      const bool lower = v.priority < w.priority;
      if (!(p.within_cluster_queue == "LowerPriority" && lower) &&
          !(p.within_cluster_queue == "LowerOrNewerEqualPriority" &&
            (lower || (v.priority == w.priority && v.seq > w.seq)))) {
        return std::nullopt;
      }
      return c;
    }
    if (p.reclaim_within_cohort == "LowerPriority" && v.priority >= w.priority) return std::nullopt;
    if (advantage) {
      c.hierarchical = true;
    } else {
      c.while_borrowing = p.borrow_within_cohort == "LowerPriority" && v.priority < w.priority &&
                          (!p.max_priority_threshold || v.priority <= *p.max_priority_threshold);
    }
    return c;
  };
  auto admitted_in = [&](QuotaTree::NodeId cq_node, QuotaTree::NodeId common, bool advantage,
                         std::vector<VictimCandidate>* out) {
    for (const auto& [id, a] : admitted_) {
      auto vq = queues_.find(a.cluster_queue);
      if (vq == queues_.end() || vq->second.node != cq_node) continue;
      if (auto c = candidate(id, cq_node, common, advantage)) out->push_back(*c);
    }
  };
  std::vector<VictimCandidate> same, advantaged, by_priority;
  if (p.within_cluster_queue != "Never") admitted_in(q.node, q.node, false, &same);
  FlavorResourceAmounts remaining = usage;
  bool advantage = fits_in_quota(q.node, remaining);
  if (p.reclaim_within_cohort != "Never") {
    std::optional<QuotaTree::NodeId> skip;
    for (std::optional<QuotaTree::NodeId> root = tree_.Parent(q.node); root; root = tree_.Parent(*root)) {
      std::vector<VictimCandidate>* list = advantage ? &advantaged : &by_priority;
      // The subtree under `root`, leaving out the one already visited and
      // every ClusterQueue or Cohort within its quota.
      std::vector<QuotaTree::NodeId> stack = {*root};
      while (!stack.empty()) {
        const QuotaTree::NodeId current = stack.back();
        stack.pop_back();
        for (QuotaTree::NodeId child : tree_.Children(current)) {
          if (child == q.node || (skip && child == *skip) || within_quota(child)) continue;
          if (tree_.IsCohort(child)) {
            stack.push_back(child);
          } else {
            admitted_in(child, *root, advantage, list);
          }
        }
      }
      advantage = fits_in_quota(*root, remaining) || advantage;
      skip = *root;
    }
  }
  auto order = [](const VictimCandidate& a, const VictimCandidate& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.admitted != b.admitted) return a.admitted > b.admitted;
    return a.id < b.id;
  };
  std::vector<VictimCandidate> ordered;
  for (auto* list : {&advantaged, &by_priority, &same}) std::sort(list->begin(), list->end(), order);
  for (bool evicting : {true, false}) {
    for (auto* list : {&advantaged, &by_priority, &same}) {
      for (const VictimCandidate& c : *list) {
        if (c.evicting == evicting) ordered.push_back(c);
      }
    }
  }
  *hierarchical = !advantaged.empty();
  return ordered;
}

std::vector<Eviction> AdmissionEngine::SelectVictims(const QueueState& q, const Workload& w,
                                                     const FlavorResourceAmounts& usage,
                                                     const std::vector<VictimCandidate>& candidates,
                                                     const std::set<FlavorResource>& need, bool allow_borrowing) {
  std::vector<const VictimCandidate*> removed;
  bool fit = false;
  for (const VictimCandidate& c : candidates) {
    // Validity changes as candidates go: re-checked against what is left.
    if (!CandidateValid(c, need, allow_borrowing)) continue;
    tree_.RemoveUsage(c.node, admitted_.at(c.id).usage);
    removed.push_back(&c);
    if (FitsQuota(q, usage, allow_borrowing)) {
      fit = true;
      break;
    }
  }
  std::vector<Eviction> victims;
  if (fit) {
    // Minimize: give back each victim but the last, newest decision first,
    // when the preemptor still fits without its eviction.
    std::vector<bool> needed(removed.size(), true);
    for (size_t k = removed.size() - 1; k-- > 0;) {
      const VictimCandidate& c = *removed[k];
      tree_.AddUsage(c.node, admitted_.at(c.id).usage);
      if (FitsQuota(q, usage, allow_borrowing)) {
        needed[k] = false;
      } else {
        tree_.RemoveUsage(c.node, admitted_.at(c.id).usage);
      }
    }
    for (size_t k = 0; k < removed.size(); ++k) {
      if (!needed[k]) continue;
      const VictimCandidate& c = *removed[k];
      const std::string reason = c.own ? "InClusterQueue"
                                 : c.while_borrowing ? "InCohortReclaimWhileBorrowing"
                                                                        : "InCohortReclamation";
      victims.push_back({c.id, w.id, reason});
      tree_.AddUsage(c.node, admitted_.at(c.id).usage);  // they keep their quota until they have stopped
    }
  } else {
    for (const VictimCandidate* c : removed) tree_.AddUsage(c->node, admitted_.at(c->id).usage);
  }
  return victims;
}

}  // namespace tau::sched
