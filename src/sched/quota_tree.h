#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tau::sched {

// A (flavor, resource) pair: "h200/nvidia.com/gpu". Quotas and usage are
// exact integers in the resource's milli-units.
struct FlavorResource {
  std::string flavor;
  std::string resource;
  friend auto operator<=>(const FlavorResource&, const FlavorResource&) = default;
};

using FlavorResourceAmounts = std::map<FlavorResource, int64_t>;

// What a ClusterQueue or Cohort declares for one FlavorResource.
struct Quota {
  int64_t nominal = 0;
  std::optional<int64_t> borrowing_limit;  // unset: may borrow all that is lendable
  std::optional<int64_t> lending_limit;    // unset: lends all of it
};

// The quota arithmetic of Kueue's ClusterQueues and (hierarchical) Cohorts
// (../shared reference, kueue-semantics §1.2), pure and exact:
//   - a ClusterQueue's subtree quota is its nominal quota; a Cohort's is its
//     own nominal plus what each child can lend (subtree − local quota);
//   - local quota = subtree − lending limit (0 when no lending limit): the
//     part a node never lends upward;
//   - usage bubbles up: a node passes to its parent only the usage beyond
//     its local quota;
//   - available(root) = subtree − usage; available(node) = its unused local
//     quota + what it may still take from above: available(parent), capped
//     by its borrowing limit when it has one;
//   - potential available (with no usage anywhere) bounds what can ever fit.
// Nodes are ClusterQueues (leaves) and Cohorts; every node has at most one
// parent. Not thread-safe; owned by the admission engine.
class QuotaTree {
 public:
  using NodeId = int;

  NodeId AddCohort(const std::string& name);
  NodeId AddClusterQueue(const std::string& name);
  // Makes `parent` (a Cohort) the parent of `child`.
  void SetParent(NodeId child, NodeId parent);
  void SetQuota(NodeId node, const FlavorResource& fr, const Quota& quota);

  void AddUsage(NodeId cluster_queue, const FlavorResourceAmounts& amounts);
  void RemoveUsage(NodeId cluster_queue, const FlavorResourceAmounts& amounts);
  // The root of `node`'s cohort tree (the node itself without a parent).
  NodeId Root(NodeId node) const;
  // A number that changes whenever usage changes anywhere in `node`'s
  // cohort tree (AddUsage or RemoveUsage with a non-empty amount, even one
  // undone later) or the configuration does, and never comes back: fit
  // checks against that tree give the same answers while it stays the
  // same. Trees do not share quota, so a usage change in one leaves the
  // others' versions alone.
  uint64_t Version(NodeId node) const { return node_version_[static_cast<size_t>(Root(node))]; }

  int64_t SubtreeQuota(NodeId node, const FlavorResource& fr) const;
  int64_t LocalQuota(NodeId node, const FlavorResource& fr) const;
  int64_t Usage(NodeId node, const FlavorResource& fr) const;
  // What more `node` may use of `fr` now (may be negative after
  // over-admission).
  int64_t Available(NodeId node, const FlavorResource& fr) const;
  // What `node` could use of `fr` if nothing were in use anywhere.
  int64_t PotentialAvailable(NodeId node, const FlavorResource& fr) const;
  // How much of `fr` the node uses beyond its own subtree quota.
  int64_t Borrowed(NodeId node, const FlavorResource& fr) const;

  enum class Fit { kNoFit, kNeedsPreemption, kFit };
  struct FitResult {
    Fit fit = Fit::kNoFit;
    // 0: fits within the ClusterQueue's own quota; k: within the quota of
    // its k-th ancestor (it borrows).
    int borrowing_level = 0;
  };
  // Whether `amount` more of `fr` fits `cluster_queue` now.
  FitResult Check(NodeId cluster_queue, const FlavorResource& fr, int64_t amount) const;
  // The same, without building the pair (the hot path of flavor assignment).
  FitResult Check(NodeId cluster_queue, const std::string& flavor, const std::string& resource, int64_t amount) const;
  // The number of a pair in this configuration, for CheckPair: stable
  // until the configuration changes (SetQuota, SetParent, a node added);
  // -1 for a pair no node declares (Check by name then).
  int PairIndex(const std::string& flavor, const std::string& resource) const { return IndexOf(flavor, resource); }
  // Check for the pair numbered `pair` (>= 0) by PairIndex.
  FitResult CheckPair(NodeId cluster_queue, int pair, int64_t amount) const {
    ComputeQuotas();
    return CheckAt(cluster_queue, pair, amount);
  }

  const std::string& Name(NodeId node) const { return nodes_[static_cast<size_t>(node)].name; }
  bool IsCohort(NodeId node) const { return nodes_[static_cast<size_t>(node)].cohort; }
  const std::vector<NodeId>& Children(NodeId node) const { return nodes_[static_cast<size_t>(node)].children; }
  // The node's non-zero subtree quotas and its usage, by pair.
  const std::map<FlavorResource, int64_t>& SubtreeQuotas(NodeId node) const;
  const std::map<FlavorResource, int64_t>& UsageOf(NodeId node) const { return nodes_[static_cast<size_t>(node)].usage; }
  // What the node could lend its children of each resource, summed over
  // every flavor of its cohort tree: its potential available, which counts
  // what it can take from above (configuration only; cached).
  const std::map<std::string, int64_t>& LendableByResource(NodeId node) const;
  std::optional<NodeId> Parent(NodeId node) const { return nodes_[static_cast<size_t>(node)].parent; }

 private:
  struct Node {
    std::string name;
    bool cohort = false;
    std::optional<NodeId> parent;
    std::vector<NodeId> children;
    std::map<FlavorResource, Quota> quotas;
    std::map<FlavorResource, int64_t> usage;  // own (ClusterQueue) + what children pass up
  };

  // The hot queries (Check, Available, PotentialAvailable, usage changes)
  // work on pairs numbered once per configuration, in flat per-node
  // arrays, instead of looking a pair up in each node's maps at every
  // level; the maps stay for the per-node views (UsageOf, SubtreeQuotas).
  // -1 for a pair no node declares.
  int IndexOf(const FlavorResource& fr) const { return IndexOf(fr.flavor, fr.resource); }
  int IndexOf(const std::string& flavor, const std::string& resource) const;
  FitResult CheckAt(NodeId cluster_queue, int k, int64_t amount) const;
  size_t Slot(NodeId id, int k) const { return static_cast<size_t>(id) * pairs_ + static_cast<size_t>(k); }
  int64_t AvailableAt(NodeId id, int k) const;
  int64_t PotentialAvailableAt(NodeId id, int k) const;
  void ChangeUsageAt(NodeId id, const FlavorResource& fr, int k, int64_t delta);

  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  Node& node(NodeId id) { return nodes_[static_cast<size_t>(id)]; }
  const Quota* QuotaOf(NodeId id, const FlavorResource& fr) const;
  // Subtree and local quotas depend only on the configuration: computed
  // once after it changes, not on every query.
  void ComputeQuotas() const;
  int64_t ComputeSubtree(NodeId id, const FlavorResource& fr) const;
  void ChangeUsage(NodeId id, const FlavorResource& fr, int64_t delta);

  std::vector<Node> nodes_;
  std::vector<uint64_t> node_version_;  // per node; only a root's is read
  uint64_t clock_ = 0;                   // the last version handed out
  mutable bool quotas_dirty_ = true;
  mutable std::vector<std::map<FlavorResource, int64_t>> subtree_;  // per node
  mutable std::vector<std::map<FlavorResource, int64_t>> local_;    // per node
  mutable std::vector<std::optional<std::map<std::string, int64_t>>> lendable_;  // per node, lazily
  // The numbered pairs and, per node and pair (Slot), subtree and local
  // quota, borrowing limit (kNoLimit when unset) and usage.
  static constexpr int64_t kNoLimit = INT64_MIN;
  mutable std::map<FlavorResource, int> index_;
  mutable size_t pairs_ = 0;
  mutable std::vector<int64_t> subtree_at_, local_at_, borrowing_limit_at_, usage_at_;
  // Per slot, the node's usage map entry once written (map entries never
  // move or go; rebuilt with the slots), so that a usage change writes the
  // map without searching it.
  mutable std::vector<int64_t*> usage_entry_at_;
};

}  // namespace tau::sched
