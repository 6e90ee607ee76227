// Fair sharing in the admission engine (kueue-semantics §1.7,
// docs/queueing.md#fair-sharing): weighted shares and the admission
// tournament.

#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "sched/admission_engine.h"
#include "sched/fair_sharing.h"

namespace tau::sched {

double AdmissionEngine::WeightedShareOf(QuotaTree::NodeId node, const FlavorResourceAmounts& extra) const {
  auto w = weights_.find(node);
  return WeightedShare(DominantResourceShare(tree_, node, extra), w == weights_.end() ? 1.0 : w->second);
}

std::optional<QuotaTree::NodeId> AdmissionEngine::CohortNode(const std::string& name) const {
  auto it = cohort_nodes_.find(name);
  if (it == cohort_nodes_.end()) return std::nullopt;
  return it->second;
}

size_t AdmissionEngine::TournamentWinner(const std::vector<Head>& heads) const {
  std::unordered_map<QuotaTree::NodeId, size_t> head_of;  // ClusterQueue node -> its head
  for (size_t i = 0; i < heads.size(); ++i) head_of[heads[i].queue->node] = i;
  struct Entry {
    size_t head;
    bool borrows;
  };
  // The head that wins the subtree of `node`, if any. Each child is scored
  // by its share after admitting its own winner.
  std::function<std::optional<Entry>(QuotaTree::NodeId)> winner = [&](QuotaTree::NodeId node) -> std::optional<Entry> {
    if (!tree_.IsCohort(node)) {
      auto it = head_of.find(node);
      if (it == head_of.end()) return std::nullopt;
      return Entry{it->second, heads[it->second].admission->borrowing_level > 0};
    }
    std::optional<Entry> best;
    std::tuple<bool, double, int64_t, int64_t> best_key;
    for (QuotaTree::NodeId child : tree_.Children(node)) {
      auto e = winner(child);
      if (!e) continue;
      const Head& h = heads[e->head];
      // Not borrowing first, then the lowest share after admission, then
      // higher priority, then older.
      auto key = std::make_tuple(e->borrows, WeightedShareOf(child, h.admission->usage), -h.workload->priority,
                                 h.workload->seq);
      if (!best || key < best_key) {
        best = e;
        best_key = key;
      }
    }
    return best;
  };
  // Roots do not share quota: the first head's root decides first.
  QuotaTree::NodeId root = heads.front().queue->node;
  while (auto parent = tree_.Parent(root)) root = *parent;
  if (auto e = winner(root)) return e->head;
  return 0;
}

std::vector<Eviction> AdmissionEngine::FindFairVictims(const QueueState& q, const Workload& w,
                                                       const std::vector<VictimCandidate>& candidates) {
  const FlavorResourceAmounts wanted = AssignFlavors(q, w).admission.usage;
  auto fits = [&] {
    Choice c = AssignFlavors(q, w);
    return c.fit == QuotaTree::Fit::kFit;
  };
  for (const std::string& strategy : config_.fair_sharing.preemption_strategies) {
    // Candidates per ClusterQueue, each list in the classical order.
    std::map<QuotaTree::NodeId, std::vector<const VictimCandidate*>> by_queue;
    for (const VictimCandidate& c : candidates) by_queue[c.node].push_back(&c);
    std::vector<VictimCandidate> chosen;
    bool fit = false;
    while (!fit && !by_queue.empty()) {
      // The ClusterQueue with the highest share now (own candidates are
      // always allowed, by withinClusterQueue, and go first).
      auto target = by_queue.end();
      double highest = -1;
      for (auto it = by_queue.begin(); it != by_queue.end(); ++it) {
        double share = it->first == q.node ? std::numeric_limits<double>::infinity() : WeightedShareOf(it->first);
        if (target == by_queue.end() || share > highest) {
          target = it;
          highest = share;
        }
      }
      const VictimCandidate& u = *target->second.front();
      bool valid = u.own;
      if (!valid) {
        const double preemptor = WeightedShareOf(q.node, wanted);
        if (strategy == "LessThanOrEqualToFinalShare") {
          tree_.RemoveUsage(u.node, admitted_.at(u.id).usage);
          valid = preemptor <= WeightedShareOf(u.node);
          tree_.AddUsage(u.node, admitted_.at(u.id).usage);
        } else {  // LessThanInitialShare
          valid = preemptor < WeightedShareOf(u.node);
        }
      }
      if (!valid) {
        by_queue.erase(target);  // nothing more to take from that queue
        continue;
      }
      tree_.RemoveUsage(u.node, admitted_.at(u.id).usage);
      chosen.push_back(u);
      target->second.erase(target->second.begin());
      if (target->second.empty()) by_queue.erase(target);
      fit = fits();
    }
    for (const VictimCandidate& c : chosen) tree_.AddUsage(c.node, admitted_.at(c.id).usage);
    if (fit) return SelectVictims(q, w, chosen, /*allow_borrowing=*/true, "InCohortFairSharing");
  }
  return {};
}

}  // namespace tau::sched
