#pragma once

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "sched/workload.h"

namespace tau::sched {

// The pending workloads of one ClusterQueue in Kueue's queue order: lower
// admission-fair-sharing score first (0 for queues without it), then higher
// priority, then older (smaller seq), then the one inserted first. Insert,
// Erase, Contains and Position are O(log n) (an order-statistics tree);
// iteration is in queue order and an iterator stays valid until its own
// entry is erased or Rescore() runs.
class PendingQueue {
 public:
  struct Entry {
    double score = 0;
    int64_t priority = 0;
    int64_t seq = 0;
    uint64_t arrival = 0;  // insertion order: breaks ties between equal keys
    std::string id;
    bool operator<(const Entry& o) const {
      if (score != o.score) return score < o.score;
      if (priority != o.priority) return priority > o.priority;
      if (seq != o.seq) return seq < o.seq;
      return arrival < o.arrival;
    }
  };
  using Tree = __gnu_pbds::tree<Entry, __gnu_pbds::null_type, std::less<Entry>, __gnu_pbds::rb_tree_tag,
                                __gnu_pbds::tree_order_statistics_node_update>;
  using const_iterator = Tree::const_iterator;

  // Queues `w` behind every entry that compares equal to it. A workload
  // already queued under the same id is replaced.
  void Insert(const Workload& w, double score);
  // Forgets `id`; false when it is not queued.
  bool Erase(const std::string& id);
  // Forgets the entry at `it`; the iterator to the entry after it.
  const_iterator Erase(const_iterator it);
  bool Contains(const std::string& id) const { return index_.count(id) > 0; }
  // The 1-based place of `id` in queue order; 0 when it is not queued.
  size_t Position(const std::string& id) const;

  // Re-keys every entry by `score_of(id)`, keeping the insertion order
  // among equals (admission fair sharing after a usage change).
  template <typename ScoreOf>
  void Rescore(ScoreOf score_of) {
    Tree rekeyed;
    for (const Entry& e : entries_) {
      Entry n = e;
      n.score = score_of(e.id);
      rekeyed.insert(n);
    }
    entries_.swap(rekeyed);
    index_.clear();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) index_.emplace(it->id, it);
  }

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  Tree entries_;
  std::unordered_map<std::string, const_iterator> index_;
  uint64_t next_arrival_ = 0;
};

}  // namespace tau::sched
