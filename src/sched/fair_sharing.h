#pragma once

#include <cstdint>
#include <limits>

#include "sched/quota_tree.h"

namespace tau::sched {

// Kueue's fair sharing (kueue-semantics §1.7, docs/queueing.md#fair-sharing).

// The dominant resource share of `node` (a ClusterQueue or Cohort) with
// `extra` usage added: for each resource, what the node would borrow beyond
// its subtree quota (summed over flavors), per mille of what its parent
// could lend of it (the parent's potential available, summed over
// flavors); the largest over resources, as a double like Kueue's (no
// rounding between queues that differ by less than one per mille). 0 for a
// node without a parent.
double DominantResourceShare(const QuotaTree& tree, QuotaTree::NodeId node, const FlavorResourceAmounts& extra);

// The share divided by the node's fair-sharing weight. A weight of 0 makes
// any borrowing infinitely large (the node only gets what nobody else
// wants) and no borrowing 0.
double WeightedShare(double dominant_share, double weight);

// As Kueue reports status.fairSharing.weightedShare: rounded up, and
// INT64_MAX for an infinite share.
int64_t ReportedWeightedShare(double weighted_share);

}  // namespace tau::sched
