#include "sched/fair_sharing.h"

#include <cmath>
#include <map>
#include <string>

namespace tau::sched {

double DominantResourceShare(const QuotaTree& tree, QuotaTree::NodeId node, const FlavorResourceAmounts& extra) {
  auto parent = tree.Parent(node);
  if (!parent) return 0;
  std::map<std::string, int64_t> borrowing;
  const auto& subtree = tree.SubtreeQuotas(node);
  const auto& usage = tree.UsageOf(node);
  auto borrowed = [&](const FlavorResource& fr) {
    auto q = subtree.find(fr);
    auto u = usage.find(fr);
    auto e = extra.find(fr);
    return (u == usage.end() ? 0 : u->second) + (e == extra.end() ? 0 : e->second) - (q == subtree.end() ? 0 : q->second);
  };
  // Only pairs with usage (now or added) can be borrowed.
  for (const auto& [fr, amount] : usage) {
    if (int64_t b = borrowed(fr); b > 0) borrowing[fr.resource] += b;
  }
  for (const auto& [fr, amount] : extra) {
    if (usage.count(fr)) continue;
    if (int64_t b = borrowed(fr); b > 0) borrowing[fr.resource] += b;
  }
  if (borrowing.empty()) return 0;
  const std::map<std::string, int64_t>& lendable = tree.LendableByResource(*parent);
  double share = 0;
  for (const auto& [resource, borrowed] : borrowing) {
    auto l = lendable.find(resource);
    if (l == lendable.end() || l->second <= 0) continue;
    share = std::max(share, static_cast<double>(borrowed) * 1000.0 / static_cast<double>(l->second));
  }
  return share;
}

double WeightedShare(double dominant_share, double weight) {
  if (dominant_share == 0) return 0;
  if (weight <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(dominant_share) / weight;
}

int64_t ReportedWeightedShare(double weighted_share) {
  if (std::isinf(weighted_share)) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::ceil(weighted_share));
}

}  // namespace tau::sched
