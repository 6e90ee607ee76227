// Deciding a queue by shape (AdmissionEngine::DecidesByShape): a pass over
// a long queue that its admissions alone change jumps from one candidate
// to the next instead of visiting every workload, and keeps one verdict
// per shape and stretch for Why().

#include <algorithm>

#include "sched/admission_engine.h"

namespace tau::sched {
namespace {

// More shapes than this and visiting each workload costs less than
// looking at every shape for each candidate.
constexpr size_t kMaxShapes = 64;

}  // namespace

bool AdmissionEngine::DecidesByShape(const QueueState& q) const {
  const Preemption& p = q.spec->preemption;
  return incremental_ && q.spec->queueing_strategy != "StrictFIFO" && !UsesAdmissionFairSharing(q) &&
         !has_stopped_local_queue_ && p.within_cluster_queue == "Never" && p.reclaim_within_cohort == "Never" &&
         q.pending.shapes().size() <= kMaxShapes;
}

void AdmissionEngine::BeginShapeScan(QueueState& q, PendingQueue::const_iterator from, ShapeScan* scan) {
  q.timeline = Timeline{};
  ++pass_stats_.by_shape;
  if (from == q.pending.end()) return;  // nothing left to decide: no timeline
  q.timeline.pass = pass_;
  q.timeline.start = *from;
  // The workloads the pass skips without a verdict (Why() names their hold
  // or backoff while it lasts, and otherwise has no verdict of this pass).
  scan->skipped.clear();
  auto skip = [&](const std::string& id) {
    auto entry = q.pending.Find(id);
    if (entry == q.pending.end() || !q.timeline.skipped.insert(id).second) return;
    scan->skipped.push_back(*entry);
  };
  for (const std::string& id : held_) skip(id);
  for (const auto& [id, until] : backoff_until_) skip(id);
  std::sort(scan->skipped.begin(), scan->skipped.end());
  scan->cursors.clear();
  for (const auto& [shape, set] : q.pending.shapes()) scan->cursors.push_back({&shape, &set, set.lower_bound(*from)});
}

const Workload* AdmissionEngine::NextByShape(QueueState& q, PendingQueue::const_iterator* from, ShapeScan* scan,
                                             const std::unordered_set<const Workload*>& parked, ChoiceRef* choice,
                                             size_t* passed_over) {
  *passed_over = 0;
  if (*from == q.pending.end()) return nullptr;
  const PendingQueue::Entry& pos = **from;
  if (!scan->last_candidate.empty() && q.pending.Contains(scan->last_candidate)) {
    // The last candidate was not admitted (it is nominated again): the
    // cursor moved past it is found again, as every other.
    scan->cursors.clear();
    for (const auto& [shape, set] : q.pending.shapes()) scan->cursors.push_back({&shape, &set, set.lower_bound(pos)});
  }
  scan->last_candidate.clear();
  auto eligible = [&](const PendingQueue::Entry& e) {
    return (held_.empty() || !held_.count(e.id)) && (backoff_until_.empty() || !backoff_until_.count(e.id)) &&
           !parked.count(e.workload);
  };
  // Each shape's first eligible workload from `pos`, in queue order.
  std::vector<std::pair<PendingQueue::const_iterator, size_t>> heads;
  for (size_t k = 0; k < scan->cursors.size(); ++k) {
    ShapeScan::Cursor& c = scan->cursors[k];
    if (c.at != c.set->end() && **c.at < pos) c.at = c.set->lower_bound(pos);
    while (c.at != c.set->end() && !eligible(**c.at)) ++c.at;
    if (c.at != c.set->end()) heads.emplace_back(*c.at, k);
  }
  std::sort(heads.begin(), heads.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
  // The first that fits is the candidate; every shape before it does not
  // fit, and its workloads up to the candidate are parked with its verdict.
  Stretch stretch;
  const Workload* found = nullptr;
  for (const auto& [entry, k] : heads) {
    ShapeScan::Cursor& c = scan->cursors[k];
    const Workload& w = *entry->workload;
    ++pass_stats_.nominated;
    ChoiceRef ch = AssignFlavorsOfShape(q, w, /*simulate_preemption=*/true, *c.shape);
    if (ch->fit == QuotaTree::Fit::kFit) {
      found = &w;
      *choice = std::move(ch);
      stretch.end = *entry;
      *from = entry;
      scan->last_candidate = w.id;
      // Past the candidate, before it leaves the queue (and its shape's
      // group with it, when it was the last there).
      if (std::next(c.at) == c.set->end()) {
        scan->cursors.erase(scan->cursors.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        ++c.at;
      }
      break;
    }
    stretch.verdicts.push_back({*c.shape, std::move(ch)});
  }
  if (found) {
    // The eligible workloads in [pos, candidate): all of them but those
    // skipped, and the one at `pos` when an earlier cycle parked it (the
    // only one of the queue the pass parked at or after `pos`).
    const PendingQueue::Entry& end = **from;
    auto in_range = [&](const std::vector<PendingQueue::Entry>& v) {
      return static_cast<size_t>(std::lower_bound(v.begin(), v.end(), end) - std::lower_bound(v.begin(), v.end(), pos));
    };
    *passed_over = q.pending.CountBefore(end) - q.pending.CountBefore(pos) - in_range(scan->skipped) -
                   (parked.count(pos.workload) ? 1 : 0);
  } else {
    *from = q.pending.end();
  }
  if (!stretch.verdicts.empty()) q.timeline.stretches.push_back(std::move(stretch));
  return found;
}

const AdmissionEngine::ShapeVerdict* AdmissionEngine::TimelineVerdict(const QueueState& q, const std::string& id,
                                                                      uint64_t pass) const {
  const Timeline& t = q.timeline;
  if (t.pass != pass || t.stretches.empty() || t.skipped.count(id)) return nullptr;
  auto entry = q.pending.Find(id);
  if (entry == q.pending.end() || *entry < t.start) return nullptr;
  // The first stretch that ends after the entry.
  auto s = std::partition_point(t.stretches.begin(), t.stretches.end(),
                                [&](const Stretch& st) { return st.end && !(*entry < *st.end); });
  if (s == t.stretches.end()) return nullptr;
  const std::string* shape = q.pending.ShapeOf(id);
  for (const ShapeVerdict& v : s->verdicts) {
    if (v.shape == *shape) return &v;
  }
  return nullptr;
}

}  // namespace tau::sched
