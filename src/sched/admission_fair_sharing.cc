// Fair sharing in the admission engine (kueue-semantics §1.7,
// docs/queueing.md#fair-sharing): weighted shares and the admission
// tournament.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
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

size_t AdmissionEngine::TournamentWinner(std::vector<Head>& heads) {
  // Per head, and per node on its path below the root: whether that node
  // borrows from its parent, and its share, once the head is admitted.
  // Roots do not share quota: the first head's root decides first, and
  // only the heads under it are scored.
  const QuotaTree::NodeId root = heads.front().queue->root;
  // ClusterQueue node -> its head, under `root` (-1: none); reset below.
  std::vector<int>& head_of = head_slot_;
  for (size_t i = 0; i < heads.size(); ++i) {
    if (heads[i].queue->root != root) continue;
    const auto node = static_cast<size_t>(heads[i].queue->node);
    if (head_of.size() <= node) head_of.resize(node + 1, -1);
    head_of[node] = static_cast<int>(i);
  }
  for (Head& h : heads) {
    if (h.queue->root != root || h.scored) continue;
    const FlavorResourceAmounts& usage = h.admission->usage;
    tree_.AddUsage(h.queue->node, usage);
    h.scores.clear();
    for (QuotaTree::NodeId n = h.queue->node; tree_.Parent(n); n = *tree_.Parent(n)) {
      bool borrows = false;
      for (const auto& [fr, used] : tree_.UsageOf(n)) borrows = borrows || used > tree_.SubtreeQuota(n, fr);
      h.scores.emplace_back(n, Score{borrows, WeightedShareOf(n)});
    }
    tree_.RemoveUsage(h.queue->node, usage);
    h.scored = true;
  }
  // The head that wins the subtree of `node`, if any.
  auto winner = [&](auto& self, QuotaTree::NodeId node) -> std::optional<size_t> {
    if (!tree_.IsCohort(node)) {
      const auto at = static_cast<size_t>(node);
      if (at >= head_of.size() || head_of[at] < 0) return std::nullopt;
      return static_cast<size_t>(head_of[at]);
    }
    std::optional<size_t> best;
    std::tuple<bool, double, int64_t, int64_t> best_key;
    for (QuotaTree::NodeId child : tree_.Children(node)) {
      auto e = self(self, child);
      if (!e) continue;
      const Head& h = heads[*e];
      const Score& score = h.ScoreAt(child);
      auto key = std::make_tuple(score.borrows, score.share, -h.workload->priority, h.workload->seq);
      if (!best || key < best_key) {
        best = e;
        best_key = key;
      }
    }
    return best;
  };
  const std::optional<size_t> e = winner(winner, root);
  for (const Head& h : heads) {
    if (h.queue->root == root) head_of[static_cast<size_t>(h.queue->node)] = -1;
  }
  return e.value_or(0);
}

void AdmissionEngine::InvalidateScores(std::vector<Head>& heads, QuotaTree::NodeId changed) const {
  // The nodes whose usage changed: `changed` and its Cohorts, but the root
  // (scores are kept for the nodes below it only).
  std::vector<QuotaTree::NodeId> path;
  for (std::optional<QuotaTree::NodeId> n = changed; n && tree_.Parent(*n); n = tree_.Parent(*n)) path.push_back(*n);
  // Only `changed` itself: no other head's path goes through it (one head
  // per ClusterQueue, and its own is no longer in `heads`).
  if (path.size() <= 1) return;
  for (Head& h : heads) {
    if (!h.scored) continue;
    for (QuotaTree::NodeId n : path) {
      if (h.Scores(n)) {
        h.scored = false;
        break;
      }
    }
  }
}

// ---- admission fair sharing (kueue-semantics §1.8) -------------------------

bool AdmissionEngine::UsesAdmissionFairSharing(const QueueState& q) const {
  return q.spec && q.spec->admission_mode == "UsageBasedAdmissionFairSharing";
}

double AdmissionEngine::AdmissionFairSharingAlpha() const {
  const auto& afs = config_.admission_fair_sharing;
  return 1.0 - std::pow(0.5, static_cast<double>(afs.usage_sampling_interval_ms) /
                                 static_cast<double>(std::max<int64_t>(1, afs.usage_half_life_ms)));
}

double AdmissionEngine::WeightedAmount(const FlavorResourceAmounts& usage) const {
  const auto& weights = config_.admission_fair_sharing.resource_weights;
  double total = 0;
  for (const auto& [fr, milli] : usage) {
    auto w = weights.find(fr.resource);
    total += (w == weights.end() ? 1.0 : w->second) * static_cast<double>(milli) / 1000.0;  // base units
  }
  return total;
}

double AdmissionEngine::LocalQueueScore(const std::string& workspace, const std::string& name) const {
  auto u = local_queue_usage_.find({workspace, name});
  const double score = u == local_queue_usage_.end() ? 0 : u->second.consumed + u->second.penalty;
  double weight = 1;
  auto lq = local_queues_.find({workspace, name});
  if (lq != local_queues_.end() && lq->second->fair_sharing_weight) {
    weight = static_cast<double>(lq->second->fair_sharing_weight->milli()) / 1000.0;
  }
  if (weight <= 0) return score > 0 ? std::numeric_limits<double>::infinity() : 0;
  return score / weight;
}

void AdmissionEngine::SampleLocalQueueUsage() {
  const int64_t interval = config_.admission_fair_sharing.usage_sampling_interval_ms;
  if (last_usage_sample_ms_ < 0 || now_ms_ < last_usage_sample_ms_) {
    last_usage_sample_ms_ = now_ms_;
    return;
  }
  if (now_ms_ - last_usage_sample_ms_ < interval) return;
  // The usage of each LocalQueue now, weighted by resource.
  std::map<std::pair<std::string, std::string>, double> current;
  for (const auto& [id, a] : admitted_) {
    const Workload& w = workloads_.at(id);
    current[{w.namespace_, w.local_queue}] += WeightedAmount(a.usage);
  }
  for (const auto& [key, amount] : current) local_queue_usage_[key];  // queues seen for the first time
  const double alpha = AdmissionFairSharingAlpha();
  // Usage was constant since the last sample (it changes only in calls
  // that sample first): apply every elapsed interval.
  int steps = 0;
  while (now_ms_ - last_usage_sample_ms_ >= interval && steps < 100000) {
    for (auto& [key, u] : local_queue_usage_) {
      auto c = current.find(key);
      u.consumed = (1 - alpha) * u.consumed + alpha * (c == current.end() ? 0 : c->second);
    }
    last_usage_sample_ms_ += interval;
    ++steps;
  }
  if (steps >= 100000) last_usage_sample_ms_ = now_ms_;
  for (auto& [key, u] : local_queue_usage_) u.penalty = 0;  // the sampled usage includes them now
  for (auto& [name, q] : queues_) {
    if (UsesAdmissionFairSharing(q)) SortQueue(q);
  }
}

AdmissionEngine::LocalQueueHistory AdmissionEngine::ExportLocalQueueHistory() const {
  LocalQueueHistory h;
  h.last_sample_ms = last_usage_sample_ms_;
  for (const auto& [key, u] : local_queue_usage_) h.consumed[key] = u.consumed;
  return h;
}

void AdmissionEngine::RestoreLocalQueueHistory(const LocalQueueHistory& h) {
  for (const auto& [key, consumed] : h.consumed) local_queue_usage_[key].consumed = consumed;
  last_usage_sample_ms_ = h.last_sample_ms;
  for (auto& [name, q] : queues_) {
    if (UsesAdmissionFairSharing(q)) SortQueue(q);
  }
}

void AdmissionEngine::AddEntryPenalty(const Workload& w, const Admission& a) {
  local_queue_usage_[{w.namespace_, w.local_queue}].penalty += AdmissionFairSharingAlpha() * WeightedAmount(a.usage);
}

std::vector<Eviction> AdmissionEngine::FindFairVictims(const QueueState& q, const Workload& w,
                                                       const FlavorResourceAmounts& usage,
                                                       const std::vector<VictimCandidate>& candidates,
                                                       const std::set<FlavorResource>& need) {
  // Another ClusterQueue is a target only while it borrows what is needed.
  auto borrowing = [&](const VictimCandidate& c) { return CandidateValid(c, need, /*allow_borrowing=*/false); };
  struct Target {
    const VictimCandidate* candidate;
    std::string reason;
  };
  std::vector<Target> removed;
  auto take = [&](const VictimCandidate& c, std::string reason) {
    tree_.RemoveUsage(c.node, admitted_.at(c.id).usage);
    removed.push_back({&c, std::move(reason)});
    return FitsQuota(q, usage, /*allow_borrowing=*/true);
  };
  // Candidates per ClusterQueue, each list in the classical order, with the
  // queue's share now; the queue with the highest share is taken from first
  // (the preemptor's own queue too, by its own share).
  struct QueueCandidates {
    QuotaTree::NodeId node;
    std::vector<const VictimCandidate*> workloads;
    double share;
  };
  std::vector<QueueCandidates> queues;
  auto queue_of = [&](std::vector<QueueCandidates>& list, QuotaTree::NodeId node) -> QueueCandidates& {
    for (auto& qc : list) {
      if (qc.node == node) return qc;
    }
    list.push_back({node, {}, WeightedShareOf(node)});
    return list.back();
  };
  for (const VictimCandidate& c : candidates) queue_of(queues, c.node).workloads.push_back(&c);
  auto pop_highest = [](std::vector<QueueCandidates>& list) {
    auto it = std::max_element(list.begin(), list.end(), [](const QueueCandidates& a, const QueueCandidates& b) {
      if (a.share != b.share) return a.share < b.share;
      return a.node > b.node;  // ties: the earlier configured queue
    });
    QueueCandidates out = std::move(*it);
    list.erase(it);
    return out;
  };
  // Kueue's target order in a cohort tree: from the root down, at each
  // Cohort the child with the highest weighted share among those that
  // borrow (or lie on the preemptor's path) and hold candidates — a Cohort
  // winning ties against a ClusterQueue — until a ClusterQueue is reached.
  // A Cohort with no such child is set aside and the walk starts again.
  std::set<QuotaTree::NodeId> on_path;
  for (std::optional<QuotaTree::NodeId> n = tree_.Parent(q.node); n; n = tree_.Parent(*n)) on_path.insert(*n);
  auto borrows_any = [&](QuotaTree::NodeId node) {
    for (const auto& [fr, used] : tree_.UsageOf(node)) {
      if (used > tree_.SubtreeQuota(node, fr)) return true;
    }
    return false;
  };
  // Ties between ClusterQueues go by their first candidates, in Kueue's
  // candidate order.
  auto goes_first = [](const VictimCandidate& a, const VictimCandidate& b) {
    if (a.evicting != b.evicting) return a.evicting;
    if (a.own != b.own) return !a.own;
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.admitted > b.admitted;
  };
  std::set<QuotaTree::NodeId> pruned;
  // Shares and borrowing are judged with the incoming workload counted.
  std::function<std::optional<QueueCandidates>(std::vector<QueueCandidates>&)> walk;
  auto pop_tournament = [&](std::vector<QueueCandidates>& list) {
    tree_.AddUsage(q.node, usage);
    std::optional<QueueCandidates> out = walk(list);
    tree_.RemoveUsage(q.node, usage);
    return out;
  };
  walk = [&](std::vector<QueueCandidates>& list) -> std::optional<QueueCandidates> {
    if (on_path.empty()) {
      if (list.empty()) return std::nullopt;
      return pop_highest(list);
    }
    QuotaTree::NodeId root = q.node;
    while (auto parent = tree_.Parent(root)) root = *parent;
    auto entry = [&](QuotaTree::NodeId node) {
      return std::find_if(list.begin(), list.end(), [&](const QueueCandidates& qc) { return qc.node == node; });
    };
    while (!pruned.count(root)) {
      QuotaTree::NodeId cohort = root;
      while (true) {
        std::optional<QuotaTree::NodeId> best_queue, best_cohort;
        double queue_share = -1, cohort_share = -1;
        for (QuotaTree::NodeId child : tree_.Children(cohort)) {
          if (pruned.count(child)) continue;
          if (tree_.IsCohort(child)) {
            if (!borrows_any(child) && !on_path.count(child)) {
              pruned.insert(child);
              continue;
            }
            const double share = WeightedShareOf(child);
            if (share >= cohort_share) {
              cohort_share = share;
              best_cohort = child;
            }
            continue;
          }
          auto it = entry(child);
          if ((child != q.node && !borrows_any(child)) || it == list.end() || it->workloads.empty()) {
            pruned.insert(child);
            continue;
          }
          const double share = WeightedShareOf(child);
          if (share > queue_share || (share == queue_share && goes_first(*it->workloads.front(),
                                                                         *entry(*best_queue)->workloads.front()))) {
            queue_share = share;
            best_queue = child;
          }
        }
        if (!best_queue && !best_cohort) {
          pruned.insert(cohort);
          break;
        }
        if (best_cohort && cohort_share >= queue_share) {
          cohort = *best_cohort;
          continue;
        }
        auto it = entry(*best_queue);
        QueueCandidates out = std::move(*it);
        list.erase(it);
        return out;
      }
    }
    return std::nullopt;
  };
  const auto& strategies = config_.fair_sharing.preemption_strategies;
  auto holds = [&](const std::string& strategy, double preemptor_new, double target_old, double target_new) {
    return strategy == "LessThanInitialShare" ? preemptor_new < target_old : preemptor_new <= target_new;
  };
  // As Kueue, the shares a strategy compares for a target are those of the
  // preemptor's and the target's subtrees just below their lowest common
  // ancestor (the ClusterQueues themselves in a flat Cohort), the
  // preemptor's counting the incoming workload.
  std::vector<QuotaTree::NodeId> preemptor_path;
  for (std::optional<QuotaTree::NodeId> n = q.node; n; n = tree_.Parent(*n)) preemptor_path.push_back(*n);
  auto below_common = [&](QuotaTree::NodeId target) -> std::pair<QuotaTree::NodeId, QuotaTree::NodeId> {
    QuotaTree::NodeId t = target;
    for (std::optional<QuotaTree::NodeId> parent = tree_.Parent(t); parent; parent = tree_.Parent(t)) {
      auto at = std::find(preemptor_path.begin(), preemptor_path.end(), *parent);
      if (at != preemptor_path.end()) return {at == preemptor_path.begin() ? q.node : *(at - 1), t};
      t = *parent;
    }
    return {q.node, target};
  };
  auto preemptor_share_against = [&](QuotaTree::NodeId target) {
    tree_.AddUsage(q.node, usage);
    const double share = WeightedShareOf(below_common(target).first);
    tree_.RemoveUsage(q.node, usage);
    return share;
  };
  auto target_share = [&](QuotaTree::NodeId target) { return WeightedShareOf(below_common(target).second); };
  // Kueue's FairSharingPreemptWithinNominal (on by default since v0.17):
  // while the preemptor's ClusterQueue, with the incoming workload, stays
  // within its nominal quota of every pair needing preemption, it reclaims
  // that quota from the queues with the highest share whatever the
  // strategies say.
  bool within_nominal = true;
  for (const FlavorResource& fr : need) {
    const auto it = usage.find(fr);
    const int64_t incoming = it == usage.end() ? 0 : it->second;
    within_nominal = within_nominal && tree_.Usage(q.node, fr) + incoming <= tree_.SubtreeQuota(q.node, fr);
  }
  bool fit = false;
  std::vector<const VictimCandidate*> retry;  // refused by the first strategy
  while (!fit && !queues.empty()) {
    std::optional<QueueCandidates> next = pop_tournament(queues);
    if (!next) break;
    QueueCandidates target = std::move(*next);
    if (target.node == q.node) {
      fit = take(*target.workloads.front(), "InClusterQueue");
      target.workloads.erase(target.workloads.begin());
      if (!target.workloads.empty()) {
        target.share = WeightedShareOf(target.node);
        queues.push_back(std::move(target));
      }
      continue;
    }
    if (within_nominal) {
      const VictimCandidate& c = *target.workloads.front();
      if (!borrowing(c)) continue;  // the queue no longer borrows: nothing to reclaim from it
      fit = take(c, "InCohortReclamation");
      target.workloads.erase(target.workloads.begin());
      if (!fit && !target.workloads.empty()) {
        target.share = WeightedShareOf(target.node);
        queues.push_back(std::move(target));
      }
      continue;
    }
    for (size_t i = 0; i < target.workloads.size(); ++i) {
      const VictimCandidate& c = *target.workloads[i];
      if (!borrowing(c)) break;  // the queue no longer borrows: nothing more to take from it
      const double target_old = target_share(c.node);
      tree_.RemoveUsage(c.node, admitted_.at(c.id).usage);
      const double target_new = target_share(c.node);
      tree_.AddUsage(c.node, admitted_.at(c.id).usage);
      const bool fair =
          !strategies.empty() && holds(strategies[0], preemptor_share_against(c.node), target_old, target_new);
      if (fair || c.while_borrowing) {
        fit = take(c, fair ? "InCohortFairSharing" : "InCohortReclaimWhileBorrowing");
        target.workloads.erase(target.workloads.begin(), target.workloads.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        if (!fit && !target.workloads.empty() && borrowing(*target.workloads.front())) {
          target.share = target_new;
          queues.push_back(std::move(target));
        }
        break;  // shares changed: pick the queue again
      }
      retry.push_back(&c);
    }
  }
  if (!fit && strategies.size() > 1) {
    // The second strategy goes on from there, with what the first refused:
    // each queue's first refused workload, highest share first.
    std::vector<QueueCandidates> again;
    for (const VictimCandidate* c : retry) {
      QueueCandidates& qc = queue_of(again, c->node);
      if (qc.workloads.empty()) qc.workloads.push_back(c);
    }
    while (!fit && !again.empty()) {
      QueueCandidates target = pop_highest(again);
      const VictimCandidate& c = *target.workloads.front();
      if (borrowing(c) && holds(strategies[1], preemptor_share_against(c.node), target_share(c.node), 0)) {
        fit = take(c, "InCohortFairSharing");
      }
    }
  }
  std::vector<Eviction> victims;
  if (fit) {
    // Minimize as classically: give back all but the last, newest first.
    std::vector<bool> needed(removed.size(), true);
    for (size_t k = removed.size() - 1; k-- > 0;) {
      const VictimCandidate& c = *removed[k].candidate;
      tree_.AddUsage(c.node, admitted_.at(c.id).usage);
      if (FitsQuota(q, usage, /*allow_borrowing=*/true)) needed[k] = false;
      else tree_.RemoveUsage(c.node, admitted_.at(c.id).usage);
    }
    for (size_t k = 0; k < removed.size(); ++k) {
      if (needed[k]) victims.push_back({removed[k].candidate->id, w.id, removed[k].reason});
    }
  }
  for (size_t k = 0; k < removed.size(); ++k) {
    const VictimCandidate& c = *removed[k].candidate;
    if (!fit || victims.end() != std::find_if(victims.begin(), victims.end(),
                                              [&](const Eviction& v) { return v.victim_id == c.id; })) {
      tree_.AddUsage(c.node, admitted_.at(c.id).usage);
    }
  }
  return victims;
}

}  // namespace tau::sched
