#include "sched/admission_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>


namespace tau::sched {
using Fit = QuotaTree::Fit;


void AdmissionEngine::Configure(const KueueConfig& config) {
  config_ = config;
  tree_ = QuotaTree();
  flavors_.clear();
  for (const auto& f : config_.resource_flavors) flavors_[f.name] = &f;
  local_queues_.clear();
  for (const auto& lq : config_.local_queues) local_queues_.emplace(std::make_pair(lq.namespace_, lq.name), &lq);

  std::map<std::string, QuotaTree::NodeId> cohorts;
  auto cohort_node = [&](const std::string& name) {
    auto it = cohorts.find(name);
    if (it != cohorts.end()) return it->second;
    return cohorts[name] = tree_.AddCohort(name);
  };
  auto set_quotas = [&](QuotaTree::NodeId node, const std::vector<ResourceGroup>& groups) {
    for (const auto& g : groups) {
      for (const auto& f : g.flavors) {
        for (const auto& r : f.resources) {
          Quota q;
          q.nominal = r.nominal_quota.milli();
          if (r.borrowing_limit) q.borrowing_limit = r.borrowing_limit->milli();
          if (r.lending_limit) q.lending_limit = r.lending_limit->milli();
          tree_.SetQuota(node, {f.name, r.name}, q);
        }
      }
    }
  };
  weights_.clear();
  for (const auto& c : config_.cohorts) {
    auto node = cohort_node(c.name);
    set_quotas(node, c.resource_groups);
    if (!c.parent_name.empty()) tree_.SetParent(node, cohort_node(c.parent_name));
    if (c.fair_sharing_weight) weights_[node] = static_cast<double>(c.fair_sharing_weight->milli()) / 1000.0;
  }
  std::map<std::string, QueueState> queues;
  for (const auto& cq : config_.cluster_queues) {
    QueueState q;
    q.spec = &cq;
    q.node = tree_.AddClusterQueue(cq.name);
    set_quotas(q.node, cq.resource_groups);
    if (cq.fair_sharing_weight) weights_[q.node] = static_cast<double>(cq.fair_sharing_weight->milli()) / 1000.0;
    if (!cq.cohort_name.empty()) tree_.SetParent(q.node, cohort_node(cq.cohort_name));
    for (const auto& g : cq.resource_groups) {
      for (const auto& f : g.flavors) {
        if (!flavors_.count(f.name) && q.inactive_reason.empty()) {
          q.inactive_reason = fmt::format("ResourceFlavor \"{}\" does not exist", f.name);
        }
      }
    }
    if (!cq.admission_checks.empty() && q.inactive_reason.empty()) {
      q.inactive_reason = fmt::format("AdmissionCheck \"{}\" does not exist (the embedded engine runs none)",
                                      cq.admission_checks.front());
    }
    queues[cq.name] = std::move(q);
  }
  queues_ = std::move(queues);
  // The pairs flavor assignment checks, numbered once the tree is built.
  for (auto& [name, q] : queues_) {
    for (const auto& g : q.spec->resource_groups) {
      auto& by_flavor = q.pairs.emplace_back();
      for (const auto& f : g.flavors) {
        auto& by_resource = by_flavor.emplace_back();
        for (const auto& r : g.covered_resources) by_resource.push_back(tree_.PairIndex(f.name, r));
      }
    }
  }
  has_hold_and_drain_ = false;
  for (auto& [name, q] : queues_) {
    q.root = tree_.Root(q.node);
    has_hold_and_drain_ = has_hold_and_drain_ || q.spec->stop_policy == "HoldAndDrain";
  }
  has_stopped_local_queue_ = false;
  for (const auto& lq : config_.local_queues) {
    has_hold_and_drain_ = has_hold_and_drain_ || lq.stop_policy == "HoldAndDrain";
    has_stopped_local_queue_ = has_stopped_local_queue_ || lq.stop_policy != "None";
  }
  all_dirty_ = true;
  dirty_roots_.clear();
  verdicts_.clear();
  decided_pass_.clear();
  reserving_roots_.clear();
  enqueued_pass_.clear();
  cohort_nodes_ = cohorts;
  // Usage of what is admitted stays.
  for (const auto& [id, a] : admitted_) {
    if (auto node = ClusterQueueNode(a.cluster_queue)) tree_.AddUsage(*node, a.usage);
  }
  // Equal keys keep the order of workload ids.
  for (const auto& [id, w] : workloads_) {
    if (admitted_.count(id)) continue;
    PendingInfo why;
    if (auto cq = ClusterQueueOf(w, &why)) Enqueue(queues_[*cq], w);
  }
}

const LocalQueue* AdmissionEngine::LocalQueueOf(const Workload& w) const {
  auto it = local_queues_.find({w.namespace_, w.local_queue});
  return it == local_queues_.end() ? nullptr : it->second;
}

std::optional<QuotaTree::NodeId> AdmissionEngine::ClusterQueueNode(const std::string& name) const {
  auto it = queues_.find(name);
  if (it == queues_.end()) return std::nullopt;
  return it->second.node;
}

std::optional<std::string> AdmissionEngine::ClusterQueueOf(const Workload& w, PendingInfo* why) const {
  if (auto found = local_queues_.find({w.namespace_, w.local_queue}); found != local_queues_.end()) {
    const LocalQueue& lq = *found->second;
    auto it = queues_.find(lq.cluster_queue);
    if (it == queues_.end()) {
      *why = {"ClusterQueueNotFound", fmt::format("LocalQueue {}/{} points to ClusterQueue \"{}\", which does not exist",
                                                  lq.namespace_, lq.name, lq.cluster_queue), 0};
      return std::nullopt;
    }
    const auto& selector = it->second.spec->namespace_selector;
    if (!selector || !selector->Matches(WorkspaceLabels(w.namespace_))) {
      *why = {"NamespaceNotSelected", fmt::format("ClusterQueue \"{}\" does not select workspace \"{}\"",
                                                  lq.cluster_queue, w.namespace_), 0};
      return std::nullopt;
    }
    return lq.cluster_queue;
  }
  *why = {"LocalQueueNotFound", fmt::format("there is no LocalQueue \"{}\" in workspace \"{}\"", w.local_queue,
                                            w.namespace_), 0};
  return std::nullopt;
}

void AdmissionEngine::Enqueue(QueueState& q, const Workload& w) {
  const bool afs = UsesAdmissionFairSharing(q);
  q.pending.Insert(w, afs ? LocalQueueScore(w.namespace_, w.local_queue) : 0, ShapeOf(w));
  enqueued_pass_[w.id] = pass_;
}

void AdmissionEngine::Touch(const std::string& cluster_queue) {
  if (auto it = queues_.find(cluster_queue); it != queues_.end()) dirty_roots_.insert(it->second.root);
}

void AdmissionEngine::TouchWorkload(const std::string& id) {
  if (auto a = admitted_.find(id); a != admitted_.end()) Touch(a->second.cluster_queue);
  if (auto w = workloads_.find(id); w != workloads_.end()) {
    PendingInfo why;
    if (auto cq = ClusterQueueOf(w->second, &why)) Touch(*cq);
  }
}

void AdmissionEngine::SortQueue(QueueState& q) {
  if (!UsesAdmissionFairSharing(q)) return;  // priority and age do not change
  dirty_roots_.insert(q.root);
  // With admission fair sharing the LocalQueue with less usage first.
  q.pending.Rescore([&](const std::string& id) {
    const Workload& w = workloads_.at(id);
    return LocalQueueScore(w.namespace_, w.local_queue);
  });
}

Status AdmissionEngine::CheckFeasible(const Workload& w) const {
  PendingInfo why;
  auto cq = ClusterQueueOf(w, &why);
  if (!cq) return NotFoundError(fmt::format("{}: {}", why.reason, why.message));
  const QueueState& q = queues_.at(*cq);
  if (!q.inactive_reason.empty()) return Status::Ok();
  ChoiceRef c = AssignFlavors(q, w);
  if (c->fit == Fit::kNoFit) {
    return FailedPreconditionError(fmt::format("the job can never be admitted to ClusterQueue \"{}\": {}: {}", *cq,
                                               c->reason, c->message.Text()));
  }
  return Status::Ok();
}

void AdmissionEngine::LeaveQueue(const std::string& id) {
  if (auto old = workloads_.find(id); old != workloads_.end() && !admitted_.count(id)) {
    PendingInfo old_why;
    if (auto old_cq = ClusterQueueOf(old->second, &old_why)) {
      queues_.at(*old_cq).pending.Erase(id);
      Touch(*old_cq);
    }
  }
}

void AdmissionEngine::Restore(const Workload& w) {
  PendingInfo why;
  auto cq = ClusterQueueOf(w, &why);
  LeaveQueue(w.id);  // a pending workload restored as admitted is no longer queued
  workloads_[w.id] = w;
  Admission a;
  a.workload_id = w.id;
  if (cq) {
    const QueueState& q = queues_.at(*cq);
    ChoiceRef c = AssignFlavors(q, w);
    if (c->fit != Fit::kNoFit) a = c->admission;
    a.workload_id = w.id;
    a.cluster_queue = *cq;
    tree_.AddUsage(q.node, a.usage);
    Touch(*cq);
  }
  admitted_[w.id] = a;
  admitted_order_[w.id] = ++next_admitted_order_;
}

Status AdmissionEngine::Submit(const Workload& w) {
  PendingInfo why;
  auto cq = ClusterQueueOf(w, &why);
  if (!cq) return NotFoundError(fmt::format("{}: {}", why.reason, why.message));
  const QueueState& q = queues_.at(*cq);
  if (q.inactive_reason.empty()) {
    ChoiceRef c = AssignFlavors(q, w);
    if (c->fit == Fit::kNoFit) {
      return FailedPreconditionError(fmt::format("the job can never be admitted to ClusterQueue \"{}\": {}: {}",
                                                 *cq, c->reason, c->message.Text()));
    }
  }
  // A workload queued again (same id) leaves its old place first.
  LeaveQueue(w.id);
  workloads_[w.id] = w;
  QueueState& target = queues_.at(*cq);
  const bool clean = incremental_ && !all_dirty_ && !dirty_roots_.count(target.root);
  Enqueue(target, workloads_.at(w.id));  // the queue points to the engine's copy
  if (!clean || !DecideWithoutPass(target, w)) Touch(*cq);
  return Status::Ok();
}

bool AdmissionEngine::DecideWithoutPass(const QueueState& q, const Workload& w) {
  auto decided = decided_pass_.find(q.root);
  if (decided == decided_pass_.end() || !q.inactive_reason.empty() || q.spec->stop_policy != "None" ||
      held_.count(w.id) || backoff_until_.count(w.id)) {
    return false;
  }
  auto eligible = [&](const std::string& id) {
    if (held_.count(id) || backoff_until_.count(id)) return false;
    const LocalQueue* lq = has_stopped_local_queue_ ? LocalQueueOf(workloads_.at(id)) : nullptr;
    return !lq || lq->stop_policy == "None";
  };
  if (!eligible(w.id)) return false;
  if (q.spec->queueing_strategy == "StrictFIFO") {
    // The first entry, eligible and pending in a clean tree, is the head the
    // last pass parked; the pass stops there and never reaches `w`.
    if (q.pending.Position(w.id) <= 1 || !eligible(q.pending.begin()->id)) return false;
    verdicts_.erase(w.id);
  } else {
    // Quota a blocked StrictFIFO head held back for the whole pass counts
    // in the verdicts the pass gives after it: a pass decides.
    if (reserving_roots_.count(q.root)) return false;
    ChoiceRef c = AssignFlavors(q, w, /*simulate_preemption=*/true);
    if (c->fit == Fit::kFit) return false;
    if (c->fit == Fit::kNeedsPreemption && !FindVictimsForPass(q, w, c->admission.usage).empty()) return false;
    verdicts_[w.id] = {c->reason, c, "", decided->second};
  }
  enqueued_pass_[w.id] = decided->second - 1;  // counts as seen by that pass
  return true;
}

void AdmissionEngine::Remove(const std::string& id) {
  SampleLocalQueueUsage();  // the usage up to now counts before it drops
  TouchWorkload(id);
  auto a = admitted_.find(id);
  if (a != admitted_.end()) {
    if (auto node = ClusterQueueNode(a->second.cluster_queue)) tree_.RemoveUsage(*node, a->second.usage);
    admitted_.erase(a);
  }
  if (auto w = workloads_.find(id); w != workloads_.end()) {
    PendingInfo why;
    if (auto cq = ClusterQueueOf(w->second, &why)) queues_.at(*cq).pending.Erase(id);
    workloads_.erase(w);
  }
  held_.erase(id);
  backoff_until_.erase(id);
  evicting_.erase(id);
  admitted_order_.erase(id);
  verdicts_.erase(id);
  enqueued_pass_.erase(id);
}

void AdmissionEngine::MarkEvicting(const std::string& id) {
  if (admitted_.count(id)) evicting_.insert(id);
  TouchWorkload(id);
}

void AdmissionEngine::SetHeld(const std::string& id, bool held) {
  if (held) held_.insert(id);
  else held_.erase(id);
  TouchWorkload(id);
}

void AdmissionEngine::SetBackoff(const std::string& id, int64_t until_ms) {
  TouchWorkload(id);
  if (until_ms > now_ms_) backoff_until_[id] = until_ms;
  else backoff_until_.erase(id);
}

std::optional<int64_t> AdmissionEngine::NextBackoffEnd() const {
  std::optional<int64_t> next;
  for (const auto& [id, until] : backoff_until_) {
    if (until > now_ms_ && (!next || until < *next)) next = until;
  }
  return next;
}

std::vector<Admission> AdmissionEngine::Schedule() {
  std::vector<Admission> admitted;
  ++pass_;
  SampleLocalQueueUsage();
  // A backing-off workload's reason names the time left.
  if (last_pass_now_ != now_ms_) {
    for (const auto& [id, until] : backoff_until_) TouchWorkload(id);
  }
  last_pass_now_ = now_ms_;
  std::erase_if(backoff_until_, [&](const auto& entry) { return entry.second <= now_ms_; });
  // HoldAndDrain: what a stopped ClusterQueue or LocalQueue admitted goes
  // back to its queue.
  for (const auto& [id, a] : admitted_) {
    if (!has_hold_and_drain_) break;
    if (evicting_.count(id)) continue;
    auto q = queues_.find(a.cluster_queue);
    if (q != queues_.end() && q->second.spec->stop_policy == "HoldAndDrain") {
      evicting_.insert(id);
      evictions_.push_back({id, "", "ClusterQueueStopped"});
      Touch(a.cluster_queue);
    } else if (const LocalQueue* lq = LocalQueueOf(workloads_.at(id)); lq && lq->stop_policy == "HoldAndDrain") {
      evicting_.insert(id);
      evictions_.push_back({id, "", "LocalQueueStopped"});
      Touch(a.cluster_queue);
    }
  }
  // The trees decided in this pass; what the pass changes is decided again
  // in the next one. The others keep their reasons.
  std::set<QuotaTree::NodeId> deciding;
  deciding.swap(dirty_roots_);
  if (!incremental_) all_dirty_ = true;
  auto decides = [&](const QueueState& q) { return all_dirty_ || deciding.count(q.root) > 0; };
  for (const auto& [name, q] : queues_) {
    if (decides(q)) {
      decided_pass_[q.root] = pass_;  // the verdicts of earlier passes lapse
      reserving_roots_.erase(q.root);
    }
  }
  pass_admitted_.clear();
  pass_victims_.clear();
  pass_reserved_.clear();
  needs_another_pass_ = false;
  pass_stats_ = {};
  std::unordered_set<const Workload*> parked;  // workloads that cannot go this pass
  std::set<std::string> blocked_queues; // StrictFIFO queues whose head cannot go
  // Per queue, where the scan for its next candidate starts: everything
  // before it is held, backing off or parked for the rest of the pass (an
  // admitted head is erased, so the next one moves into its place).
  std::map<const QueueState*, PendingQueue::const_iterator> scan_from;
  // The queues that are the only one of their tree with candidates left
  // (from the start, or since a cycle that nominated no other queue of the
  // tree: a queue with no candidate gets none back within a pass); those
  // that can be are decided by shape from then on.
  std::unordered_set<const QueueState*> alone;
  std::unordered_map<const QueueState*, ShapeScan> shape_scans;
  {
    std::unordered_map<QuotaTree::NodeId, std::vector<const QueueState*>> live;
    for (const auto& [name, q] : queues_) {
      if (decides(q) && q.inactive_reason.empty() && q.spec->stop_policy == "None" && !q.pending.empty()) {
        live[q.root].push_back(&q);
      }
    }
    for (const auto& [root, qs] : live) {
      if (qs.size() == 1) alone.insert(qs.front());
    }
  }
  struct Candidate {
    QueueState* queue;
    const Workload* workload;
    ChoiceRef choice;
    std::vector<Eviction> targets;  // when it needs preemption
    bool deferred = false;          // its victims include one this pass admitted
    // What it holds back without victims, once worked out (it does not
    // change within the cycle: see ReservationWithoutVictims).
    std::optional<FlavorResourceAmounts> hold;
  };
  // Quota held back for the rest of the current cycle by heads that must
  // preempt but have no candidates (ReservationWithoutVictims); a blocked
  // StrictFIFO head, nominated again in every cycle in Kueue, holds it for
  // the rest of the pass (pass_reserved_).
  std::vector<std::pair<QuotaTree::NodeId, FlavorResourceAmounts>> cycle_reserved;
  // A head that cannot go in this pass: record why and move past it.
  // The message is the choice's (when given) followed by `text`.
  auto park = [&](Candidate& c, const char* reason, const ChoiceRef& choice, std::string text) {
    verdicts_[c.workload->id] = {reason, choice, std::move(text), pass_};
    if (c.queue->spec->queueing_strategy == "StrictFIFO") blocked_queues.insert(c.queue->spec->name);
    else parked.insert(c.workload);
  };
  // One cycle as Kueue's: each queue's head is nominated against the quota
  // as the cycle starts (its flavors and, when it needs preemption, its
  // victims among the workloads admitted before the cycle; a choice naming
  // one this pass admitted waits for the next pass), then the heads
  // go in order, each re-checked against what the ones before it took: a
  // head that fits is admitted, a preemptor reserves its quota (so heads
  // after it that no longer fit wait) and evicts its victims.
  auto process = [&](Candidate& c) {
    const Workload& w = *c.workload;
    const Choice& choice = *c.choice;
    if (choice.fit == Fit::kNoFit) return park(c, choice.reason, c.choice, "");
    const bool preempts = choice.fit == Fit::kNeedsPreemption;
    if (preempts && c.targets.empty()) {
      if (!c.deferred) {
        FlavorResourceAmounts hold = c.hold ? std::move(*c.hold) : ReservationWithoutVictims(*c.queue, choice.admission);
        if (!hold.empty()) {
          tree_.AddUsage(c.queue->node, hold);
          if (c.queue->spec->queueing_strategy == "StrictFIFO") {
            pass_reserved_.emplace_back(c.queue->node, std::move(hold));
            reserving_roots_.insert(c.queue->root);
          } else {
            cycle_reserved.emplace_back(c.queue->node, std::move(hold));
          }
        }
      }
      return park(c, choice.reason, c.choice, "");
    }
    for (const Eviction& t : c.targets) {
      if (pass_victims_.count(t.victim_id)) {
        return park(c, "WaitingForQuota", c.choice, "; its preemption targets overlap another workload's in this pass");
      }
    }
    // A preemptor counts the quota of its own victims and of the victims of
    // the preemptors before it in the pass as freed (Kueue's cycle); a head
    // admitted now does not, as they still hold it until they stop.
    bool fits;
    if (preempts) {
      std::set<std::string> freed = pass_victims_;
      for (const Eviction& t : c.targets) freed.insert(t.victim_id);
      ReleaseWhileDeciding(freed, true);
      fits = FitsQuota(*c.queue, choice.admission.usage, /*allow_borrowing=*/true);
      ReleaseWhileDeciding(freed, false);
    } else {
      fits = FitsQuota(*c.queue, choice.admission.usage, /*allow_borrowing=*/true);
    }
    if (!fits) {
      // A head that fit at nomination is nominated again next cycle.
      if (preempts) park(c, "WaitingForQuota", c.choice, "; no longer fits after other admissions");
      return;
    }
    tree_.AddUsage(c.queue->node, choice.admission.usage);
    if (preempts) {
      pass_reserved_.emplace_back(c.queue->node, choice.admission.usage);
      std::string names;
      Touch(c.queue->spec->name);
      for (const Eviction& t : c.targets) {
        TouchWorkload(t.victim_id);
        pass_victims_.insert(t.victim_id);
        names += (names.empty() ? "" : ", ") + t.victim_id;
        if (evicting_.insert(t.victim_id).second) evictions_.push_back(t);
      }
      return park(c, "WaitingForPreemptedWorkloads", nullptr, "preempting " + names);
    }
    Touch(c.queue->spec->name);
    Admission& a = admitted_[w.id];
    a = choice.admission;
    a.workload_id = w.id;
    admitted_order_[w.id] = ++next_admitted_order_;
    pass_admitted_.insert(w.id);
    admitted.push_back(a);
    // The candidate is where its queue's scan stopped: the scan goes on
    // from the workload after it.
    auto& at = scan_from.at(c.queue);
    at = c.queue->pending.Erase(at);
    if (UsesAdmissionFairSharing(*c.queue)) {
      AddEntryPenalty(w, a);
      SortQueue(*c.queue);
      at = c.queue->pending.begin();
    }
  };
  // Cycles run: a queue decided by shape offers its next candidate in the
  // cycle where visiting each workload would have reached it (each
  // workload parked before it takes a cycle), so that admissions of
  // different trees come in the same order.
  uint64_t cycle = 0;
  while (true) {
    // One candidate per queue: its first workload not held or parked.
    std::vector<Candidate> candidates;
    std::optional<uint64_t> next_ready;  // the earliest cycle a waiting candidate is due
    for (auto& [name, q] : queues_) {
      if (!q.inactive_reason.empty() || q.spec->stop_policy != "None" || blocked_queues.count(name) || !decides(q)) {
        continue;
      }
      auto& i = scan_from.try_emplace(&q, q.pending.begin()).first->second;
      if (alone.count(&q) && DecidesByShape(q)) {
        auto [it, fresh] = shape_scans.try_emplace(&q);
        ShapeScan& scan = it->second;
        if (fresh) BeginShapeScan(q, i, &scan);
        if (!scan.next) {
          ChoiceRef choice;
          size_t passed_over = 0;
          if (const Workload* w = NextByShape(q, &i, &scan, parked, &choice, &passed_over)) {
            scan.next = ShapeScan::Next{w, std::move(choice), cycle + passed_over};
          }
        }
        if (scan.next && scan.next->cycle <= cycle) {
          candidates.push_back({&q, scan.next->workload, std::move(scan.next->choice), {}});
          scan.next.reset();
        } else if (scan.next) {
          next_ready = std::min(next_ready.value_or(scan.next->cycle), scan.next->cycle);
        }
        continue;
      }
      for (; i != q.pending.end(); ++i) {
        const std::string& id = i->id;
        if ((!held_.empty() && held_.count(id)) || (!backoff_until_.empty() && backoff_until_.count(id)) ||
            parked.count(i->workload)) {
          continue;
        }
        const Workload& w = *i->workload;
        // A stopped LocalQueue's workloads stay in place without blocking
        // the ClusterQueue, as Kueue takes them out of its queue.
        if (const LocalQueue* lq = has_stopped_local_queue_ ? LocalQueueOf(w) : nullptr; lq && lq->stop_policy != "None") {
          continue;
        }
        ++pass_stats_.nominated;
        // The queue keeps each workload's shape: not built again per cycle.
        const std::string* shape = incremental_ ? i->shape : nullptr;
        candidates.push_back({&q, &w,
                              shape ? AssignFlavorsOfShape(q, w, /*simulate_preemption=*/true, *shape)
                                    : AssignFlavors(q, w, /*simulate_preemption=*/true),
                              {}});
        break;
      }
    }
    if (candidates.empty()) {
      if (!next_ready) break;
      cycle = *next_ready;  // the cycles between only park workloads
      continue;
    }
    ++cycle;
    {
      std::unordered_map<QuotaTree::NodeId, std::vector<const QueueState*>> nominated;
      for (const Candidate& c : candidates) nominated[c.queue->root].push_back(c.queue);
      for (const auto& [root, qs] : nominated) {
        if (qs.size() == 1) alone.insert(qs.front());
      }
    }
    for (Candidate& c : candidates) {
      if (c.choice->fit == Fit::kNeedsPreemption) {
        c.targets = FindVictimsForPass(*c.queue, *c.workload, c.choice->admission.usage, &c.deferred);
      }
    }
    if (FairSharing()) {
      // Tournament order, run again for each pick: shares change with every
      // admission and reservation.
      // Heads that can neither be admitted nor preempt, and hold nothing
      // back (ReservationWithoutVictims), change nothing: they are parked
      // first, and the tournament orders the others.
      std::vector<Candidate*> left;
      for (Candidate& c : candidates) {
        // What a head holds back depends only on its own ClusterQueue's
        // usage, which nothing else changes within the cycle.
        bool holds_nothing = false;
        if (c.choice->fit == Fit::kNeedsPreemption && c.targets.empty()) {
          if (!c.deferred) c.hold = ReservationWithoutVictims(*c.queue, c.choice->admission);
          holds_nothing = c.deferred || c.hold->empty();
        }
        if (c.choice->fit == Fit::kNoFit || holds_nothing) {
          process(c);
        } else {
          left.push_back(&c);
        }
      }
      // Trees share no quota: each tree's heads are ordered by its own
      // tournament. The tree decided next is the one holding the first
      // head (in nomination order) still waiting.
      struct Tree {
        std::vector<Candidate*> left;
        std::vector<Head> heads;
        std::vector<size_t> order;  // each head's place among all heads of the cycle
      };
      std::map<QuotaTree::NodeId, Tree> trees;
      for (size_t i = 0; i < left.size(); ++i) {
        Tree& t = trees[left[i]->queue->root];
        t.left.push_back(left[i]);
        t.heads.push_back({left[i]->queue, left[i]->workload, &left[i]->choice->admission});
        t.order.push_back(i);
      }
      for (size_t picks = 0; picks < left.size(); ++picks) {
        Tree* t = nullptr;
        for (auto& [root, tree] : trees) {
          if (!tree.order.empty() && (!t || tree.order.front() < t->order.front())) t = &tree;
        }
        if (!incremental_) {
          for (Head& h : t->heads) h.scored = false;
        }
        const size_t w = TournamentWinner(t->heads);
        Candidate* c = t->left[w];
        t->left.erase(t->left.begin() + static_cast<std::ptrdiff_t>(w));
        t->heads.erase(t->heads.begin() + static_cast<std::ptrdiff_t>(w));
        t->order.erase(t->order.begin() + static_cast<std::ptrdiff_t>(w));
        const uint64_t before = tree_.Version(c->queue->node);
        process(*c);
        if (tree_.Version(c->queue->node) != before) InvalidateScores(t->heads, c->queue->node);
      }
    } else {
      // Kueue's order: without borrowing before borrowing, then higher
      // priority, then older; whether a head fits or must preempt does not
      // matter.
      // (Pointers are sorted: a Candidate is large to move.)
      std::vector<Candidate*> order;
      order.reserve(candidates.size());
      for (Candidate& c : candidates) order.push_back(&c);
      std::stable_sort(order.begin(), order.end(), [](const Candidate* a, const Candidate* b) {
        if (a->choice->admission.borrowing_level != b->choice->admission.borrowing_level) {
          return a->choice->admission.borrowing_level < b->choice->admission.borrowing_level;
        }
        if (a->workload->priority != b->workload->priority) return a->workload->priority > b->workload->priority;
        return a->workload->seq < b->workload->seq;
      });
      for (Candidate* c : order) process(*c);
    }
    for (const auto& [node, hold] : cycle_reserved) tree_.RemoveUsage(node, hold);
    cycle_reserved.clear();
  }
  // The reservations last for the pass only: the victims keep their quota
  // until they have stopped, and the preemptors are nominated again next
  // pass (then relying on the same victims, which are being evicted).
  for (const auto& [node, usage] : pass_reserved_) tree_.RemoveUsage(node, usage);
  pass_reserved_.clear();
  pass_victims_.clear();
  pass_admitted_.clear();
  all_dirty_ = false;
  return admitted;
}

std::vector<Eviction> AdmissionEngine::TakeEvictions() {
  std::vector<Eviction> out;
  out.swap(evictions_);
  return out;
}

void AdmissionEngine::ReleaseWhileDeciding(const std::set<std::string>& ids, bool release) {
  for (const std::string& id : ids) {
    const Admission& a = admitted_.at(id);
    const QuotaTree::NodeId node = queues_.at(a.cluster_queue).node;
    if (release) tree_.RemoveUsage(node, a.usage);
    else tree_.AddUsage(node, a.usage);
  }
}

}  // namespace tau::sched
