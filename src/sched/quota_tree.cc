#include "sched/quota_tree.h"

#include <algorithm>
#include <set>

namespace tau::sched {

QuotaTree::NodeId QuotaTree::AddCohort(const std::string& name) {
  nodes_.push_back(Node{name, true, std::nullopt, {}, {}, {}});
  node_version_.push_back(++clock_);
  quotas_dirty_ = true;
  return static_cast<NodeId>(nodes_.size() - 1);
}

QuotaTree::NodeId QuotaTree::AddClusterQueue(const std::string& name) {
  nodes_.push_back(Node{name, false, std::nullopt, {}, {}, {}});
  node_version_.push_back(++clock_);
  quotas_dirty_ = true;
  return static_cast<NodeId>(nodes_.size() - 1);
}

void QuotaTree::SetParent(NodeId child, NodeId parent) {
  quotas_dirty_ = true;
  for (uint64_t& v : node_version_) v = ++clock_;
  node(child).parent = parent;
  node(parent).children.push_back(child);
}

void QuotaTree::SetQuota(NodeId id, const FlavorResource& fr, const Quota& quota) {
  quotas_dirty_ = true;
  for (uint64_t& v : node_version_) v = ++clock_;
  node(id).quotas[fr] = quota;
}

int64_t QuotaTree::ComputeSubtree(NodeId id, const FlavorResource& fr) const {
  const Quota* q = QuotaOf(id, fr);
  int64_t total = q ? q->nominal : 0;
  for (NodeId child : node(id).children) {
    int64_t sub = ComputeSubtree(child, fr);
    const Quota* cq = QuotaOf(child, fr);
    int64_t local = cq && cq->lending_limit ? std::max<int64_t>(0, sub - *cq->lending_limit) : 0;
    total += sub - local;
  }
  return total;
}

void QuotaTree::ComputeQuotas() const {
  if (!quotas_dirty_) return;
  subtree_.assign(nodes_.size(), {});
  local_.assign(nodes_.size(), {});
  lendable_.assign(nodes_.size(), std::nullopt);
  // Every FlavorResource any node declares, for every node (a node without
  // quota for it may still borrow it).
  std::set<FlavorResource> all;
  for (const Node& n : nodes_) {
    for (const auto& [fr, q] : n.quotas) all.insert(fr);
  }
  index_.clear();
  for (const FlavorResource& fr : all) index_.emplace(fr, static_cast<int>(index_.size()));
  pairs_ = index_.size();
  subtree_at_.assign(nodes_.size() * pairs_, 0);
  local_at_.assign(nodes_.size() * pairs_, 0);
  borrowing_limit_at_.assign(nodes_.size() * pairs_, kNoLimit);
  usage_at_.assign(nodes_.size() * pairs_, 0);
  usage_entry_at_.assign(nodes_.size() * pairs_, nullptr);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeId id = static_cast<NodeId>(i);
    for (const auto& [fr, k] : index_) {
      int64_t sub = ComputeSubtree(id, fr);
      if (sub != 0) subtree_[i][fr] = sub;
      subtree_at_[Slot(id, k)] = sub;
      const Quota* q = QuotaOf(id, fr);
      if (q && q->lending_limit) {
        local_[i][fr] = std::max<int64_t>(0, sub - *q->lending_limit);
        local_at_[Slot(id, k)] = local_[i][fr];
      }
      if (q && q->borrowing_limit) borrowing_limit_at_[Slot(id, k)] = *q->borrowing_limit;
    }
    for (const auto& [fr, used] : nodes_[i].usage) {
      if (auto it = index_.find(fr); it != index_.end()) usage_at_[Slot(id, it->second)] = used;
    }
  }
  quotas_dirty_ = false;
}

const Quota* QuotaTree::QuotaOf(NodeId id, const FlavorResource& fr) const {
  auto it = node(id).quotas.find(fr);
  return it == node(id).quotas.end() ? nullptr : &it->second;
}

int64_t QuotaTree::SubtreeQuota(NodeId id, const FlavorResource& fr) const {
  if (const int k = IndexOf(fr); k >= 0) return subtree_at_[Slot(id, k)];
  const auto& m = subtree_[static_cast<size_t>(id)];
  auto it = m.find(fr);
  return it == m.end() ? 0 : it->second;
}

int64_t QuotaTree::LocalQuota(NodeId id, const FlavorResource& fr) const {
  if (const int k = IndexOf(fr); k >= 0) return local_at_[Slot(id, k)];
  const auto& m = local_[static_cast<size_t>(id)];
  auto it = m.find(fr);
  return it == m.end() ? 0 : it->second;
}

int64_t QuotaTree::Usage(NodeId id, const FlavorResource& fr) const {
  if (const int k = IndexOf(fr); k >= 0) return usage_at_[Slot(id, k)];
  auto it = node(id).usage.find(fr);
  return it == node(id).usage.end() ? 0 : it->second;
}

int QuotaTree::IndexOf(const std::string& flavor, const std::string& resource) const {
  ComputeQuotas();
  // Configurations have a handful of pairs: a scan comparing lengths first
  // beats ordered string comparisons.
  if (pairs_ <= 16) {
    for (const auto& [key, k] : index_) {
      if (key.resource.size() == resource.size() && key.flavor.size() == flavor.size() && key.resource == resource &&
          key.flavor == flavor) {
        return k;
      }
    }
    return -1;
  }
  auto it = index_.find(FlavorResource{flavor, resource});
  return it == index_.end() ? -1 : it->second;
}

void QuotaTree::ChangeUsageAt(NodeId id, const FlavorResource& fr, int k, int64_t delta) {
  while (delta != 0) {
    const size_t slot = Slot(id, k);
    const int64_t local = local_at_[slot];
    const int64_t before = usage_at_[slot];
    const int64_t after = before + delta;
    usage_at_[slot] = after;
    int64_t*& entry = usage_entry_at_[slot];
    if (!entry) entry = &node(id).usage[fr];
    *entry = after;
    // Only usage beyond the local (never lent) quota reaches the parent.
    auto parent = node(id).parent;
    if (!parent) return;
    delta = std::max<int64_t>(0, after - local) - std::max<int64_t>(0, before - local);
    id = *parent;
  }
}

void QuotaTree::ChangeUsage(NodeId id, const FlavorResource& fr, int64_t delta) {
  if (delta == 0) return;
  if (const int k = IndexOf(fr); k >= 0) return ChangeUsageAt(id, fr, k, delta);
  const int64_t local = LocalQuota(id, fr);
  const int64_t before = Usage(id, fr);
  const int64_t after = before + delta;
  node(id).usage[fr] = after;
  // Only usage beyond the local (never lent) quota reaches the parent.
  if (auto parent = node(id).parent) {
    int64_t passed = std::max<int64_t>(0, after - local) - std::max<int64_t>(0, before - local);
    ChangeUsage(*parent, fr, passed);
  }
}

void QuotaTree::AddUsage(NodeId cq, const FlavorResourceAmounts& amounts) {
  if (!amounts.empty()) node_version_[static_cast<size_t>(Root(cq))] = ++clock_;
  for (const auto& [fr, v] : amounts) ChangeUsage(cq, fr, v);
}

void QuotaTree::RemoveUsage(NodeId cq, const FlavorResourceAmounts& amounts) {
  if (!amounts.empty()) node_version_[static_cast<size_t>(Root(cq))] = ++clock_;
  for (const auto& [fr, v] : amounts) ChangeUsage(cq, fr, -v);
}

QuotaTree::NodeId QuotaTree::Root(NodeId id) const {
  while (auto parent = node(id).parent) id = *parent;
  return id;
}

int64_t QuotaTree::AvailableAt(NodeId id, int k) const {
  const size_t slot = Slot(id, k);
  const int64_t subtree = subtree_at_[slot];
  const int64_t usage = usage_at_[slot];
  auto parent = node(id).parent;
  if (!parent) return subtree - usage;
  const int64_t local = local_at_[slot];
  const int64_t local_available = std::max<int64_t>(0, local - usage);
  int64_t from_parent = AvailableAt(*parent, k);
  if (const int64_t limit = borrowing_limit_at_[slot]; limit != kNoLimit) {
    int64_t cap = (subtree - local) - std::max<int64_t>(0, usage - local) + limit;
    from_parent = std::min(from_parent, cap);
  }
  return local_available + from_parent;
}

int64_t QuotaTree::PotentialAvailableAt(NodeId id, int k) const {
  const size_t slot = Slot(id, k);
  const int64_t subtree = subtree_at_[slot];
  auto parent = node(id).parent;
  if (!parent) return subtree;
  int64_t potential = local_at_[slot] + PotentialAvailableAt(*parent, k);
  if (const int64_t limit = borrowing_limit_at_[slot]; limit != kNoLimit) potential = std::min(potential, subtree + limit);
  return potential;
}

int64_t QuotaTree::Available(NodeId id, const FlavorResource& fr) const {
  if (const int k = IndexOf(fr); k >= 0) return AvailableAt(id, k);
  const int64_t subtree = SubtreeQuota(id, fr);
  const int64_t usage = Usage(id, fr);
  auto parent = node(id).parent;
  if (!parent) return subtree - usage;
  const int64_t local = LocalQuota(id, fr);
  const int64_t local_available = std::max<int64_t>(0, local - usage);
  int64_t from_parent = Available(*parent, fr);
  const Quota* q = QuotaOf(id, fr);
  if (q && q->borrowing_limit) {
    // What it may hold beyond its local quota: its lendable part plus the
    // borrowing limit, less what it already holds there.
    int64_t cap = (subtree - local) - std::max<int64_t>(0, usage - local) + *q->borrowing_limit;
    from_parent = std::min(from_parent, cap);
  }
  return local_available + from_parent;
}

int64_t QuotaTree::PotentialAvailable(NodeId id, const FlavorResource& fr) const {
  if (const int k = IndexOf(fr); k >= 0) return PotentialAvailableAt(id, k);
  const int64_t subtree = SubtreeQuota(id, fr);
  auto parent = node(id).parent;
  if (!parent) return subtree;
  int64_t potential = LocalQuota(id, fr) + PotentialAvailable(*parent, fr);
  const Quota* q = QuotaOf(id, fr);
  if (q && q->borrowing_limit) potential = std::min(potential, subtree + *q->borrowing_limit);
  return potential;
}

int64_t QuotaTree::Borrowed(NodeId id, const FlavorResource& fr) const {
  return std::max<int64_t>(0, Usage(id, fr) - SubtreeQuota(id, fr));
}

QuotaTree::FitResult QuotaTree::Check(NodeId cq, const std::string& flavor, const std::string& resource,
                                      int64_t amount) const {
  if (const int k = IndexOf(flavor, resource); k >= 0) return CheckAt(cq, k, amount);
  return Check(cq, FlavorResource{flavor, resource}, amount);
}

QuotaTree::FitResult QuotaTree::CheckAt(NodeId cq, int k, int64_t amount) const {
  FitResult result;
  {
    if (amount > PotentialAvailableAt(cq, k)) return result;
    result.fit = amount > AvailableAt(cq, k) ? Fit::kNeedsPreemption : Fit::kFit;
    std::optional<NodeId> at = cq;
    int level = 0;
    int64_t needed = usage_at_[Slot(cq, k)] + amount;
    while (at && needed > subtree_at_[Slot(*at, k)]) {
      const size_t slot = Slot(*at, k);
      needed = std::max<int64_t>(0, needed - local_at_[slot]);
      auto parent = node(*at).parent;
      if (!parent) break;
      needed += usage_at_[Slot(*parent, k)] - std::max<int64_t>(0, usage_at_[slot] - local_at_[slot]);
      at = parent;
      ++level;
    }
    result.borrowing_level = level;
    return result;
  }
}

QuotaTree::FitResult QuotaTree::Check(NodeId cq, const FlavorResource& fr, int64_t amount) const {
  if (const int k = IndexOf(fr); k >= 0) return CheckAt(cq, k, amount);
  // A pair no node declares: no quota anywhere.
  FitResult result;
  if (amount > PotentialAvailable(cq, fr)) return result;  // kNoFit: never, whatever finishes
  if (amount > Available(cq, fr)) {
    result.fit = Fit::kNeedsPreemption;
  } else {
    result.fit = Fit::kFit;
  }
  // The lowest subtree whose quota holds the new usage.
  std::optional<NodeId> at = cq;
  int level = 0;
  int64_t needed = Usage(cq, fr) + amount;
  while (at && needed > SubtreeQuota(*at, fr)) {
    // What this node passes up, seen from its parent.
    needed = std::max<int64_t>(0, needed - LocalQuota(*at, fr));
    auto parent = node(*at).parent;
    if (!parent) break;
    needed += Usage(*parent, fr) - std::max<int64_t>(0, Usage(*at, fr) - LocalQuota(*at, fr));
    at = parent;
    ++level;
  }
  result.borrowing_level = level;
  return result;
}

const std::map<FlavorResource, int64_t>& QuotaTree::SubtreeQuotas(NodeId id) const {
  ComputeQuotas();
  return subtree_[static_cast<size_t>(id)];
}

const std::map<std::string, int64_t>& QuotaTree::LendableByResource(NodeId id) const {
  ComputeQuotas();
  auto& cached = lendable_[static_cast<size_t>(id)];
  if (!cached) {
    cached.emplace();
    // Every pair of the whole tree: a Cohort lends what it can get from
    // above too, not only the pairs its own subtree has quota for.
    NodeId root = id;
    while (auto parent = node(root).parent) root = *parent;
    for (const auto& [fr, quota] : subtree_[static_cast<size_t>(root)]) (*cached)[fr.resource] += PotentialAvailable(id, fr);
  }
  return *cached;
}

}  // namespace tau::sched
