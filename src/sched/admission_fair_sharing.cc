// Fair sharing in the admission engine (kueue-semantics §1.7,
// docs/queueing.md#fair-sharing): weighted shares and the admission
// tournament.

#include <functional>
#include <limits>
#include <tuple>

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
  // The head (index) that wins the subtree of `node`, if any; `usage` is
  // what it adds, to score each level by the share after admitting it.
  struct Entry {
    size_t head;
    bool borrows;
  };
  std::function<std::optional<Entry>(QuotaTree::NodeId)> winner = [&](QuotaTree::NodeId node) -> std::optional<Entry> {
    if (!tree_.IsCohort(node)) {
      for (size_t i = 0; i < heads.size(); ++i) {
        if (heads[i].queue->node == node) return Entry{i, heads[i].admission->borrowing_level > 0};
      }
      return std::nullopt;
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
  // Roots do not share quota; the first root's winner goes first.
  for (size_t i = 0; i < heads.size(); ++i) {
    QuotaTree::NodeId root = heads[i].queue->node;
    while (auto parent = tree_.Parent(root)) root = *parent;
    if (auto e = winner(root)) return e->head;
  }
  return 0;
}

}  // namespace tau::sched
