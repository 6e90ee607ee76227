#include "sched/quota_tree.h"

#include <algorithm>
#include <set>

namespace tau::sched {

QuotaTree::NodeId QuotaTree::AddCohort(const std::string& name) {
  nodes_.push_back(Node{name, true, std::nullopt, {}, {}, {}});
  node_version_.push_back(++clock_);
  return static_cast<NodeId>(nodes_.size() - 1);
}

QuotaTree::NodeId QuotaTree::AddClusterQueue(const std::string& name) {
  nodes_.push_back(Node{name, false, std::nullopt, {}, {}, {}});
  node_version_.push_back(++clock_);
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
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (const FlavorResource& fr : all) {
      int64_t sub = ComputeSubtree(static_cast<NodeId>(i), fr);
      if (sub != 0) subtree_[i][fr] = sub;
      const Quota* q = QuotaOf(static_cast<NodeId>(i), fr);
      if (q && q->lending_limit) local_[i][fr] = std::max<int64_t>(0, sub - *q->lending_limit);
    }
  }
  quotas_dirty_ = false;
}

const Quota* QuotaTree::QuotaOf(NodeId id, const FlavorResource& fr) const {
  auto it = node(id).quotas.find(fr);
  return it == node(id).quotas.end() ? nullptr : &it->second;
}

int64_t QuotaTree::SubtreeQuota(NodeId id, const FlavorResource& fr) const {
  ComputeQuotas();
  const auto& m = subtree_[static_cast<size_t>(id)];
  auto it = m.find(fr);
  return it == m.end() ? 0 : it->second;
}

int64_t QuotaTree::LocalQuota(NodeId id, const FlavorResource& fr) const {
  ComputeQuotas();
  const auto& m = local_[static_cast<size_t>(id)];
  auto it = m.find(fr);
  return it == m.end() ? 0 : it->second;
}

int64_t QuotaTree::Usage(NodeId id, const FlavorResource& fr) const {
  auto it = node(id).usage.find(fr);
  return it == node(id).usage.end() ? 0 : it->second;
}

void QuotaTree::ChangeUsage(NodeId id, const FlavorResource& fr, int64_t delta) {
  if (delta == 0) return;
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

int64_t QuotaTree::Available(NodeId id, const FlavorResource& fr) const {
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

QuotaTree::FitResult QuotaTree::Check(NodeId cq, const FlavorResource& fr, int64_t amount) const {
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
