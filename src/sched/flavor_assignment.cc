// Flavor assignment (AdmissionEngine::ComputeFlavors): which flavor of
// each of a ClusterQueue's resource groups a workload gets, and whether it
// fits now, must preempt, or can never fit, with Kueue's preferences
// (FlavorFungibility, BorrowingOverPreemption). The memo in front of it is
// flavor_assignment_cache.cc.

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "sched/admission_engine.h"

namespace tau::sched {
namespace {

using Fit = QuotaTree::Fit;

// BorrowingOverPreemption (Kueue's default preference): fit without
// borrowing > fit borrowing > preempt without borrowing > preempt borrowing.
int Rank(Fit fit, int level) {
  switch (fit) {
    case Fit::kFit: return level == 0 ? 4 : 3;
    case Fit::kNeedsPreemption: return level == 0 ? 2 : 1;
    case Fit::kNoFit: return 0;
  }
  return 0;
}

}  // namespace

bool AdmissionEngine::FlavorMatches(const ResourceFlavor& flavor, const Workload& w, std::string* why) const {
  // Node labels: a key the flavor defines must match what the pods select.
  for (const auto& [key, value] : w.node_selector) {
    auto it = flavor.node_labels.find(key);
    if (it != flavor.node_labels.end() && it->second != value) {
      *why = fmt::format("flavor {} has {}={}, the job selects {}", flavor.name, key, it->second, value);
      return false;
    }
  }
  if (flavor.node_taints.empty()) return true;
  // The pods' tolerations and the flavor's own, which Kueue adds to the
  // pods it admits on it.
  std::vector<Toleration> tolerations = w.tolerations;
  tolerations.insert(tolerations.end(), flavor.tolerations.begin(), flavor.tolerations.end());
  if (const Taint* taint = FindUntoleratedTaint(flavor.node_taints, tolerations)) {
    *why = fmt::format("flavor {} has taint {} that the job does not tolerate", flavor.name, Describe(*taint));
    return false;
  }
  return true;
}

AdmissionEngine::Choice AdmissionEngine::ComputeFlavors(const QueueState& q, const Workload& w,
                                                        bool simulate_preemption, bool* consulted_victims) const {
  Choice out;
  out.fit = Fit::kFit;
  out.admission.cluster_queue = q.spec->name;
  for (const auto& [resource, per_pod] : w.per_pod) {
    if (per_pod <= 0) continue;
    const ResourceGroup* group = nullptr;
    for (const auto& g : q.spec->resource_groups) {
      if (std::find(g.covered_resources.begin(), g.covered_resources.end(), resource) != g.covered_resources.end()) {
        group = &g;
      }
    }
    if (!group) {
      out.fit = Fit::kNoFit;
      out.reason = "NoMatchingFlavor";
      out.message = VerdictMessage::Of(fmt::format("ClusterQueue \"{}\" has no quota for {}", q.spec->name, resource));
      return out;
    }
  }
  for (size_t gi = 0; gi < q.spec->resource_groups.size(); ++gi) {
    const ResourceGroup& group = q.spec->resource_groups[gi];
    // The resources of this group the workload asks for, with their place
    // among the group's covered resources.
    struct Wanted {
      const std::string* resource;
      int64_t amount;
      size_t covered;
    };
    // On the stack for a group of up to kSmall resources (the common case;
    // this runs for every workload a pass looks at).
    constexpr size_t kSmall = 8;
    Wanted small[kSmall]{};
    std::vector<Wanted> large;
    size_t n = 0;
    for (size_t ri = 0; ri < group.covered_resources.size(); ++ri) {
      const std::string& r = group.covered_resources[ri];
      auto it = w.per_pod.find(r);
      if (it == w.per_pod.end() || it->second <= 0) continue;
      const Wanted one{&r, it->second * w.count, ri};
      if (n < kSmall) {
        small[n] = one;
      } else {
        if (large.empty()) large.assign(small, small + kSmall);
        large.push_back(one);
      }
      ++n;
    }
    const std::span<const Wanted> wanted = large.empty() ? std::span<const Wanted>(small, n) : std::span<const Wanted>(large);
    if (wanted.empty()) continue;
    int best_rank = -1;
    Fit best_fit = Fit::kNoFit;
    int best_level = 0;
    const std::string* best_flavor = nullptr;
    std::string mismatch;
    // The first shortfall met, formatted only when the group's verdict
    // names it (a later flavor that fits makes it moot).
    struct Gap {
      Fit fit = Fit::kFit;  // kFit: none yet
      const std::string* resource = nullptr;
      const std::string* flavor = nullptr;
      int64_t amount = 0;
    } gap;
    // The amounts are read now; the text is formatted when it is shown.
    auto gap_message = [&]() -> VerdictMessage {
      if (gap.fit == Fit::kFit) return {};
      const FlavorResource fr{*gap.flavor, *gap.resource};
      VerdictMessage m;
      m.resource = *gap.resource;
      m.flavor = *gap.flavor;
      m.requested = gap.amount;
      if (gap.fit == Fit::kNoFit) {
        m.kind = VerdictMessage::Kind::kNeverFits;
        m.bound = tree_.PotentialAvailable(q.node, fr);
      } else {
        m.kind = VerdictMessage::Kind::kShortfall;
        m.bound = std::max<int64_t>(0, tree_.Available(q.node, fr));
      }
      return m;
    };
    const std::vector<std::vector<int>>* group_pairs = gi < q.pairs.size() ? &q.pairs[gi] : nullptr;
    for (size_t fi = 0; fi < group.flavors.size(); ++fi) {
      const auto& f = group.flavors[fi];
      const std::vector<int>* flavor_pairs = group_pairs && fi < group_pairs->size() ? &(*group_pairs)[fi] : nullptr;
      auto fl = flavors_.find(f.name);
      if (fl == flavors_.end()) continue;
      std::string why;
      if (!FlavorMatches(*fl->second, w, &why)) {
        if (mismatch.empty()) mismatch = why;
        continue;
      }
      Fit fit = Fit::kFit;
      int level = 0;
      for (const auto& [resource, amount, covered] : wanted) {
        const int k = flavor_pairs && covered < flavor_pairs->size() ? (*flavor_pairs)[covered] : -1;
        auto r = k >= 0 ? tree_.CheckPair(q.node, k, amount) : tree_.Check(q.node, f.name, *resource, amount);
        if (static_cast<int>(r.fit) < static_cast<int>(fit)) fit = r.fit;
        level = std::max(level, r.borrowing_level);
        if (r.fit != Fit::kFit && gap.fit == Fit::kFit) gap = {r.fit, resource, &f.name, amount};
      }
      if (fit == Fit::kNeedsPreemption && simulate_preemption && q.spec->flavor_fungibility.when_can_preempt == "MayStopSearch") {
        // Would preempting on this flavor find victims? Without any, the
        // search goes on as if the flavor did not fit now. A queue that
        // never preempts has none, whoever asks.
        FlavorResourceAmounts on_flavor;
        for (const auto& [resource, amount, covered] : wanted) on_flavor[{f.name, *resource}] = amount;
        const Preemption& p = q.spec->preemption;
        const bool never = p.within_cluster_queue == "Never" && p.reclaim_within_cohort == "Never";
        if (!never) *consulted_victims = true;
        if (never || const_cast<AdmissionEngine*>(this)->FindVictims(q, w, on_flavor).empty()) {
          if (best_rank < 0) {
            best_rank = Rank(fit, level);
            best_fit = fit;
            best_level = level;
            best_flavor = &f.name;
          }
          continue;
        }
      }
      int rank = Rank(fit, level);
      if (rank > best_rank) {
        best_rank = rank;
        best_fit = fit;
        best_level = level;
        best_flavor = &f.name;
      }
      if (fit == Fit::kFit && level == 0) break;
      const FlavorFungibility& ff = q.spec->flavor_fungibility;
      bool next = fit == Fit::kNoFit || (fit == Fit::kNeedsPreemption && ff.when_can_preempt == "TryNextFlavor") ||
                  (fit == Fit::kFit && level > 0 && ff.when_can_borrow == "TryNextFlavor");
      if (!next) break;
    }
    if (best_rank < 0) {
      out.fit = Fit::kNoFit;
      out.reason = "NoMatchingFlavor";
      out.message = VerdictMessage::Of(mismatch.empty() ? "no flavor of the ClusterQueue exists" : mismatch);
      return out;
    }
    if (best_fit == Fit::kNoFit) {
      out.fit = Fit::kNoFit;
      out.reason = "ExceedsMaxQuota";
      out.message = gap_message();
      return out;
    }
    if (static_cast<int>(best_fit) < static_cast<int>(out.fit)) {
      out.fit = best_fit;
      out.reason = "WaitingForQuota";
      out.message = gap_message();
    }
    out.admission.borrowing_level = std::max(out.admission.borrowing_level, best_level);
    for (const auto& [resource, amount, covered] : wanted) {
      out.admission.flavors[*resource] = *best_flavor;
      out.admission.usage[{*best_flavor, *resource}] += amount;
    }
  }
  return out;
}

}  // namespace tau::sched
