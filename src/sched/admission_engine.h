#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "sched/kueue_objects.h"
#include "sched/pending_queue.h"
#include "sched/quota_tree.h"
#include "sched/verdict_message.h"
#include "sched/workload.h"

namespace tau::sched {

// Why a workload waits, with Kueue's reason names.
struct PendingInfo {
  std::string reason;   // NoMatchingFlavor, ExceedsMaxQuota, WaitingForQuota, LocalQueueNotFound,
                        // ClusterQueueInactive, ClusterQueueStopped, LocalQueueStopped, Held, Backoff
  std::string message;  // which flavor, resource and amounts
  int position = 0;     // 1-based place among the ClusterQueue's pending workloads
};

// A decided admission: the flavor chosen for each resource.
struct Admission {
  std::string workload_id;
  std::string cluster_queue;
  std::map<std::string, std::string> flavors;  // resource -> flavor
  FlavorResourceAmounts usage;
  int borrowing_level = 0;
};

// An admitted workload to stop so that a higher-priority (or reclaiming)
// one can be admitted (Kueue's classical preemption, §1.6).
struct Eviction {
  std::string victim_id;
  std::string preemptor_id;
  std::string reason;  // InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing
                       // | InCohortFairSharing | ClusterQueueStopped | LocalQueueStopped
};

// The embedded admission engine with Kueue's semantics
// (kueue-semantics §1.2-1.5): ClusterQueues with resource groups and
// ordered flavors, flat or nested Cohorts with borrowing and lending
// limits, LocalQueues mapping workspaces to ClusterQueues, priorities,
// StrictFIFO and BestEffortFIFO, flavor fungibility. Pure: no I/O, no
// clock, no threads; the same calls give the same decisions.
//
// Beyond Kueue: in one Schedule() pass a BestEffortFIFO queue whose head
// does not fit goes on to the workloads behind it, so small jobs are not
// held back by a large one waiting for quota.
class AdmissionEngine {
 public:
  // Replaces the configuration; admitted workloads keep their usage.
  void Configure(const KueueConfig& config);

  // Queues a workload (by its LocalQueue) or reports why it never can run:
  // FailedPrecondition with NoMatchingFlavor / ExceedsMaxQuota details.
  Status Submit(const Workload& workload);
  // The refusal Submit would give, without queueing anything.
  Status CheckFeasible(const Workload& workload) const;
  // Records an admission that already happened (after a restart): the
  // workload holds quota on the flavors assignment would pick, whether or
  // not they are free now.
  void Restore(const Workload& workload);
  // Marks a restored workload as already being evicted (its preemption was
  // decided before a restart): it is not chosen as a victim again.
  void MarkEvicting(const std::string& workload_id);
  // Forgets a pending workload, or releases an admitted one's quota.
  void Remove(const std::string& workload_id);
  void SetHeld(const std::string& workload_id, bool held);
  // Requeue backoff: a pending workload is not admitted before `until_ms`
  // (see RequeueDelayMs) and waits with reason Backoff meanwhile; like a
  // held one it keeps its place and does not block the queue. The engine
  // has no clock: SetNow tells it the time, in the same milliseconds.
  void SetBackoff(const std::string& workload_id, int64_t until_ms);
  void SetNow(int64_t now_ms) { now_ms_ = now_ms; }
  // The earliest time a backoff ends, so the caller can run Schedule()
  // then instead of polling; nullopt when no workload is backing off.
  std::optional<int64_t> NextBackoffEnd() const;

  // Admits what fits now, in queue order. Pending workloads get a reason.
  // Incremental: only cohort trees where something changed since the last
  // pass are decided again, and flavor assignment is remembered per
  // workload shape while the tree's usage stays the same; the decisions and
  // reasons are those of deciding everything from scratch.
  std::vector<Admission> Schedule();
  // Whether the last Schedule() left a preemptor waiting only because its
  // victims include a workload that same pass admitted (a pass never evicts
  // what it admitted). The caller runs another pass soon (on its next loop
  // turn), where that choice is an ordinary one, instead of waiting for an
  // unrelated event.
  bool NeedsAnotherPass() const { return needs_another_pass_; }
  // Test hook: with `false`, every pass decides every tree from scratch and
  // nothing is remembered (the reference the incremental passes must match).
  void SetIncrementalForTesting(bool incremental) { incremental_ = incremental; }
  // What the last Schedule() did: the workloads it nominated (assigned
  // flavors to as a queue's candidate, or to judge one it passed over) and
  // the queues it decided by shape (DecidesByShape).
  struct PassStats {
    size_t nominated = 0;
    size_t by_shape = 0;
  };
  const PassStats& LastPassStats() const { return pass_stats_; }

  // Workloads Schedule() decided to preempt since the last call. They keep
  // their quota until Remove() is called for them (once they have stopped);
  // their preemptors wait with WaitingForPreemptedWorkloads meanwhile.
  std::vector<Eviction> TakeEvictions();

  // Why a pending workload waits, as of the last pass that decided its
  // cohort tree, and its place in its ClusterQueue's order now; nullopt
  // when it is not pending or no pass has decided it since it was queued.
  // O(log n) in the queue's length.
  std::optional<PendingInfo> Why(const std::string& workload_id) const;
  // The admitted workloads holding quota a pending workload needs: in its
  // ClusterQueue's cohort tree, using a flavor and resource it asks for.
  std::vector<std::string> QuotaHolders(const std::string& workload_id) const;
  bool IsAdmitted(const std::string& workload_id) const { return admitted_.count(workload_id) > 0; }
  bool IsKnown(const std::string& workload_id) const { return workloads_.count(workload_id) > 0; }
  const KueueConfig& config() const { return config_; }
  const QuotaTree& quota() const { return tree_; }
  std::optional<QuotaTree::NodeId> ClusterQueueNode(const std::string& name) const;
  // Fair sharing (admission_fair_sharing.cc): whether the Configuration
  // enables it, and a ClusterQueue's or Cohort's weighted share now.
  bool FairSharing() const { return config_.fair_sharing.enable; }
  double WeightedShareOf(QuotaTree::NodeId node, const FlavorResourceAmounts& extra = {}) const;
  std::optional<QuotaTree::NodeId> CohortNode(const std::string& name) const;
  // Admission fair sharing (admission_fair_sharing.cc): a LocalQueue's
  // score — its decayed usage weighted by resource, plus the entry
  // penalties of its admissions since the last sample, over its weight.
  double LocalQueueScore(const std::string& workspace, const std::string& name) const;
  // The decayed usage per LocalQueue and when it was last sampled, to keep
  // across restarts (the entry penalties are folded in at the next sample).
  struct LocalQueueHistory {
    std::map<std::pair<std::string, std::string>, double> consumed;  // (workspace, name)
    int64_t last_sample_ms = -1;
  };
  LocalQueueHistory ExportLocalQueueHistory() const;
  void RestoreLocalQueueHistory(const LocalQueueHistory& history);
  // The ClusterQueue a workload goes to, or the reason it has none.
  std::optional<std::string> ClusterQueueOf(const Workload& w, PendingInfo* why) const;

 private:
  // What the last pass that decided a queue by shape (DecidesByShape) left
  // for Why(): from `start` on in queue order, the stretches between two
  // candidates, each with the verdict of every shape whose workloads the
  // pass parked there. A stretch whose workloads were all skipped or
  // parked one by one is left out.
  struct Choice;
  using ChoiceRef = std::shared_ptr<const Choice>;
  struct ShapeVerdict {
    std::string shape;
    ChoiceRef choice;  // its reason and message
  };
  struct Stretch {
    std::optional<PendingQueue::Entry> end;  // exclusive; nullopt: to the queue's end
    std::vector<ShapeVerdict> verdicts;
  };
  struct Timeline {
    uint64_t pass = 0;  // the pass that wrote it; 0: none
    PendingQueue::Entry start;
    std::vector<Stretch> stretches;
    std::unordered_set<std::string> skipped;  // held or backing off in that pass
  };
  // A flavor assignment's verdict. Shared, and never changed once made:
  // workloads of one shape get the same one while their tree's usage stays
  // the same, so `admission.workload_id` is left empty (set when admitted).
  struct Choice {
    QuotaTree::Fit fit = QuotaTree::Fit::kNoFit;
    Admission admission;
    const char* reason = "";  // a Kueue reason name; "" when it fits
    VerdictMessage message;
  };
  struct CachedChoice {
    uint64_t tree_version;
    ChoiceRef choice;
  };
  // Shapes are looked up without building a key (heterogeneous lookup).
  struct ShapeHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using ChoiceMemo = std::unordered_map<std::string, CachedChoice, ShapeHash, std::equal_to<>>;
  struct QueueState {
    const ClusterQueue* spec = nullptr;
    QuotaTree::NodeId node = 0;
    QuotaTree::NodeId root = 0;  // of its cohort tree
    std::string inactive_reason;  // "" when active
    PendingQueue pending;
    Timeline timeline;
    // Flavor assignment remembered by shape, without and with the
    // simulation of preemption (AssignFlavorsOfShape).
    mutable ChoiceMemo memo[2];
    // Per resource group, per flavor, per covered resource: the quota
    // tree's number for the pair (QuotaTree::PairIndex), -1 when no node
    // declares it.
    std::vector<std::vector<std::vector<int>>> pairs;
  };

  // The flavor of each resource group, scanned in order under the queue's
  // flavorFungibility. With `simulate_preemption` (nomination), a flavor
  // that needs preemption but where no victims exist does not stop the
  // search under whenCanPreempt: MayStopSearch (Kueue's preemption oracle).
  //
  // Remembered per workload shape (ClusterQueue, requests, count, node
  // selector, tolerations) while the queue's cohort tree's usage stays the
  // same (QuotaTree::Version), unless it looked for victims: a queue of
  // workloads that do not fit is then not re-evaluated one by one.
  ChoiceRef AssignFlavors(const QueueState& q, const Workload& w, bool simulate_preemption = false) const;
  // The same for a workload whose shape (ShapeOf) is known.
  ChoiceRef AssignFlavorsOfShape(const QueueState& q, const Workload& w, bool simulate_preemption,
                                 const std::string& shape) const;
  // Everything of a workload that flavor assignment reads, except what only
  // a victim search reads (its id and priority), as one key.
  static std::string ShapeOf(const Workload& w);
  // AssignFlavors without the memo; `consulted_victims` is set when the
  // answer depended on a victim search.
  Choice ComputeFlavors(const QueueState& q, const Workload& w, bool simulate_preemption,
                        bool* consulted_victims) const;
  // Among queue heads, the next to go under fair sharing: a tournament
  // from each root Cohort down, where each child is scored by its state
  // after admitting its candidate: not borrowing from that Cohort first
  // (judged at each level), then the lowest share, higher priority, older.
  // Returns an index into `heads`.
  //
  // Each head's scores are kept between picks of a cycle: admitting or
  // reserving for one head changes usage only on its own path, so only the
  // heads whose paths share a Cohort below the root with it are scored
  // again (InvalidateScores).
  struct Score {
    bool borrows;
    double share;
  };
  struct Head {
    const QueueState* queue;
    const Workload* workload;
    const Admission* admission;
    bool scored = false;
    // Per node on its path below the root, leaf first (a path is short:
    // a vector searched in order beats a map).
    std::vector<std::pair<QuotaTree::NodeId, Score>> scores;
    const Score& ScoreAt(QuotaTree::NodeId n) const {
      for (const auto& [node, score] : scores) {
        if (node == n) return score;
      }
      return scores.front().second;  // not reached: winner() asks only for nodes on the path
    }
    bool Scores(QuotaTree::NodeId n) const {
      for (const auto& entry : scores) {
        if (entry.first == n) return true;
      }
      return false;
    }
  };
  size_t TournamentWinner(std::vector<Head>& heads);
  std::vector<int> head_slot_;  // TournamentWinner's scratch: head per ClusterQueue node, -1 when none
  // Usage changed in ClusterQueue `changed`: forgets the scores that
  // depended on it.
  void InvalidateScores(std::vector<Head>& heads, QuotaTree::NodeId changed) const;
  // Admission fair sharing: whether `q` orders by LocalQueue usage; the
  // decay step α; the usage sampled every interval (caught up to now_ms_);
  // and an admission's entry penalty.
  bool UsesAdmissionFairSharing(const QueueState& q) const;
  double AdmissionFairSharingAlpha() const;
  void SampleLocalQueueUsage();
  void AddEntryPenalty(const Workload& w, const Admission& a);
  double WeightedAmount(const FlavorResourceAmounts& usage) const;
  struct VictimCandidate {
    std::string id;
    bool own;       // in the preemptor's ClusterQueue
    bool evicting;  // already being evicted: taken first
    // Another ClusterQueue's workload that borrowWithinCohort lets go while
    // the preemptor borrows; other queues' workloads may otherwise only be
    // reclaimed so that the preemptor fits without borrowing.
    bool while_borrowing;
    int64_t priority;
    int64_t admitted;  // admission order: the most recent goes first
    QuotaTree::NodeId node;
    QuotaTree::NodeId common;  // lowest common ancestor with the preemptor's ClusterQueue
    // Kueue's hierarchical advantage: the preemptor reclaims quota of a
    // subtree it fits in (from its ClusterQueue up), which another queue
    // borrows; such a workload goes whatever its priority and even while
    // the preemptor borrows.
    bool hierarchical = false;
  };
  // Kueue's classical candidates (its hierarchical preemption), in the
  // order they are tried: already evicting first; then those over which the
  // preemptor has the hierarchical advantage, those other queues lend by
  // priority, and the preemptor's own; each lowest priority, most recently
  // admitted first. Other queues' workloads are looked for only in
  // ClusterQueues and Cohorts above their quota of a pair in `need`.
  // `hierarchical` tells whether any has the advantage.
  std::vector<VictimCandidate> ClassicalCandidates(const QueueState& q, const Workload& w,
                                                   const FlavorResourceAmounts& usage,
                                                   const std::set<FlavorResource>& need, bool* hierarchical) const;
  // The fewest admitted workloads whose eviction lets `w` fit with `usage`
  // (its flavors' amounts), chosen and
  // minimized as Kueue's classical preemption does (admission_preemption.cc);
  // may name workloads already being evicted, and workloads this pass
  // admitted (Kueue's next cycle would take them). Empty when no allowed
  // set does.
  std::vector<Eviction> FindVictims(const QueueState& q, const Workload& w, const FlavorResourceAmounts& usage);
  // FindVictims' choice when this pass may carry it out: empty when it
  // names a workload the pass admitted (the pass never evicts those; the
  // preemptor is nominated again next pass).
  std::vector<Eviction> FindVictimsForPass(const QueueState& q, const Workload& w,
                                           const FlavorResourceAmounts& usage, bool* deferred = nullptr);
  // What a head that must preempt but has no candidates holds back in its
  // cycle (Kueue's resourcesToReserve): up to its nominal quota, or up to
  // its borrowing limit when it borrows (all it asks without a limit), so
  // that lower-priority workloads of other queues do not take it first.
  // Nothing when its ClusterQueue can always reclaim what it lends
  // (reclaimWithinCohort: Any).
  FlavorResourceAmounts ReservationWithoutVictims(const QueueState& q, const Admission& a) const;
  std::vector<Eviction> FindVictimsAmongOthers(const QueueState& q, const Workload& w,
                                               const FlavorResourceAmounts& usage);
  // The (flavor, resource) pairs of `usage` that do not fit `q` now.
  std::set<FlavorResource> NeedingPreemption(const QueueState& q, const FlavorResourceAmounts& usage) const;
  // Takes the usage of admitted workloads `ids` out of the quota tree while
  // a decision counts it as freed (`release`), or puts it back.
  void ReleaseWhileDeciding(const std::set<std::string>& ids, bool release);
  // Whether `usage` fits `q` now, and without borrowing unless allowed.
  bool FitsQuota(const QueueState& q, const FlavorResourceAmounts& usage, bool allow_borrowing) const;
  // Kueue's candidateIsValid: another queue's workload stays a candidate
  // only while its ClusterQueue, and every Cohort between it and the
  // common ancestor, uses more than its quota of a pair in `need`.
  bool CandidateValid(const VictimCandidate& c, const std::set<FlavorResource>& need, bool allow_borrowing) const;
  // Greedy removal of the valid `candidates` in order until `usage` fits,
  // then minimized by giving back in reverse order; empty when it never fits.
  std::vector<Eviction> SelectVictims(const QueueState& q, const Workload& w, const FlavorResourceAmounts& usage,
                                      const std::vector<VictimCandidate>& candidates,
                                      const std::set<FlavorResource>& need, bool allow_borrowing);
  // Fair-sharing preemption (admission_fair_sharing.cc): the candidates,
  // taken from the ClusterQueue with the highest share first and kept only
  // while the Configuration's strategy holds, then minimized.
  std::vector<Eviction> FindFairVictims(const QueueState& q, const Workload& w, const FlavorResourceAmounts& usage,
                                        const std::vector<VictimCandidate>& candidates,
                                        const std::set<FlavorResource>& need);
  bool FlavorMatches(const ResourceFlavor& flavor, const Workload& w, std::string* why) const;
  // The workload's LocalQueue, or nullptr when it does not exist.
  const LocalQueue* LocalQueueOf(const Workload& w) const;
  // Queues `w` in `q` in queue order; re-keys an admission-fair-sharing
  // queue by its LocalQueues' scores now.
  void Enqueue(QueueState& q, const Workload& w);
  // Takes a pending workload out of the queue it is in (by its current
  // LocalQueue); nothing for an admitted or unknown one.
  void LeaveQueue(const std::string& workload_id);
  void SortQueue(QueueState& q);
  // Incremental passes: a cohort tree (with its ClusterQueues) is decided
  // again only when something it depends on changed since the last pass —
  // its queues' workloads, holds, backoffs, usage, evictions, the
  // configuration — or the last pass changed it (admitted, reserved or
  // evicted in it). Trees share no quota, so an untouched tree's decisions
  // and reasons from the last pass still hold.
  void Touch(const std::string& cluster_queue);
  // A submit into a tree the last pass left unchanged (clean) that a pass
  // would only park: `w` gets the verdict that pass would give it without
  // deciding the tree again — behind a blocked StrictFIFO head, or in a
  // BestEffortFIFO queue when it neither fits nor finds victims (parking
  // changes no usage, so every other verdict still holds). False when a
  // pass is needed. `w` is already queued in `q`.
  bool DecideWithoutPass(const QueueState& q, const Workload& w);
  // Deciding a queue by shape (admission_by_shape.cc). Once a queue is the
  // only one of its cohort tree with candidates left in a pass, nothing
  // but its own admissions changes the tree's usage until the pass ends,
  // and usage only grows: a workload that does not fit stays parked, and
  // its verdict depends only on its shape and the usage when the pass
  // reaches it. For a BestEffortFIFO queue that cannot preempt, the pass
  // then jumps from one candidate to the next: the first workload in
  // queue order whose shape fits now, found from the first eligible
  // workload of each shape; the workloads it passes over are parked with
  // their shape's verdict, recorded once per stretch (Timeline) instead of
  // once per workload. The decisions and reasons are those of visiting
  // every workload.
  bool DecidesByShape(const QueueState& q) const;
  struct ShapeScan {
    struct Cursor {
      const std::string* shape;
      const PendingQueue::ShapeSet* set;
      PendingQueue::ShapeSet::const_iterator at;
    };
    std::vector<Cursor> cursors;
    std::string last_candidate;  // when it is still queued, the cursors are found again
    // The candidate found, and the cycle of the pass in which it is due.
    struct Next {
      const Workload* workload;
      ChoiceRef choice;
      uint64_t cycle;
    };
    std::optional<Next> next;
    // The workloads the pass skips in the queue (held or backing off), in
    // queue order.
    std::vector<PendingQueue::Entry> skipped;
  };
  // Starts deciding `q` by shape at `from` in this pass.
  void BeginShapeScan(QueueState& q, PendingQueue::const_iterator from, ShapeScan* scan);
  // The first workload at or after `*from` that is eligible (not held,
  // backing off or in `parked`) and fits now, with its choice; records the
  // verdicts of the shapes passed over, counts the eligible workloads
  // before it (each of which visiting them one by one parks in a cycle of
  // its own) and moves `*from` to it (end() when none is left).
  const Workload* NextByShape(QueueState& q, PendingQueue::const_iterator* from, ShapeScan* scan,
                              const std::unordered_set<const Workload*>& parked, ChoiceRef* choice,
                              size_t* passed_over);
  // The verdict a pass that decided `q` by shape gave pending workload
  // `id`, when that pass is `pass`; nullptr otherwise.
  const ShapeVerdict* TimelineVerdict(const QueueState& q, const std::string& id, uint64_t pass) const;
  void TouchWorkload(const std::string& workload_id);

  KueueConfig config_;
  QuotaTree tree_;
  std::map<std::string, QueueState> queues_;       // by ClusterQueue name
  std::map<std::string, const ResourceFlavor*> flavors_;
  std::map<std::pair<std::string, std::string>, const LocalQueue*> local_queues_;  // by (workspace, name)
  std::map<std::string, Workload> workloads_;      // pending and admitted
  std::map<std::string, Admission> admitted_;
  std::set<std::string> held_;
  std::map<std::string, int64_t> backoff_until_;  // ms, only while in the future
  int64_t now_ms_ = 0;
  std::set<std::string> evicting_;
  std::vector<Eviction> evictions_;
  std::map<std::string, int64_t> admitted_order_;  // admission order of each admitted workload
  int64_t next_admitted_order_ = 0;
  // Within one Schedule() pass: what it admitted (never a victim in it),
  // the victims preemptors of the pass rely on (their quota counts as free
  // for later preemptors and victim searches of the pass, never for an
  // admission) and the quota reserved for those preemptors.
  std::set<std::string> pass_admitted_;
  bool needs_another_pass_ = false;  // see NeedsAnotherPass()
  PassStats pass_stats_;
  std::set<std::string> pass_victims_;
  std::vector<std::pair<QuotaTree::NodeId, FlavorResourceAmounts>> pass_reserved_;
  // Trees where the last pass held quota back for the rest of the pass for
  // a blocked StrictFIFO head with no candidates: a submit there is decided
  // by a pass, not at submit.
  std::set<QuotaTree::NodeId> reserving_roots_;
  // Why a workload waits is computed on demand (Why()) from what the last
  // pass that decided its tree left: the verdict of each workload that
  // pass parked (tagged with the pass), the pass that last decided each
  // tree, and the pass before which each pending workload was queued. A
  // pass writes nothing for the workloads it did not reach (those behind a
  // blocked StrictFIFO head), so a pass costs what it decides, not the
  // queue's length.
  struct Verdict {
    const char* reason = "";
    ChoiceRef choice;  // whose message it gives first, when any
    std::string text;  // after the choice's message, or the message
    uint64_t pass = 0;
    std::string Message() const { return choice ? choice->message.Text() + text : text; }
  };
  std::unordered_map<std::string, Verdict> verdicts_;
  std::unordered_map<QuotaTree::NodeId, uint64_t> decided_pass_;  // by root
  std::unordered_map<std::string, uint64_t> enqueued_pass_;       // passes begun when queued
  uint64_t pass_ = 0;                                              // passes begun
  std::map<QuotaTree::NodeId, double> weights_;  // fair-sharing weight per node (default 1)
  struct LocalQueueUsage {
    double consumed = 0;  // decayed, resource-weighted usage
    double penalty = 0;   // entry penalties since the last sample
  };
  std::map<std::pair<std::string, std::string>, LocalQueueUsage> local_queue_usage_;  // (workspace, name)
  int64_t last_usage_sample_ms_ = -1;
  std::map<std::string, QuotaTree::NodeId> cohort_nodes_;
  std::set<QuotaTree::NodeId> dirty_roots_;  // trees to decide in the next pass
  bool all_dirty_ = true;                     // every tree (after Configure)
  bool incremental_ = true;
  bool has_hold_and_drain_ = false;           // some ClusterQueue or LocalQueue drains
  bool has_stopped_local_queue_ = false;      // some LocalQueue's stopPolicy is not None
  std::optional<int64_t> last_pass_now_;      // now_ms_ in the last pass (backoff messages)
};

}  // namespace tau::sched
