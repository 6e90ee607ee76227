#pragma once

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

#include <cstdint>
#include <functional>
#include <set>
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
//
// Entries are also grouped by shape (an opaque key the caller gives: the
// engine's is what flavor assignment reads of a workload), each group in
// queue order, so that a pass can find the first workload of each shape
// from a place in the queue without walking the workloads between.
class PendingQueue {
 public:
  struct Entry {
    double score = 0;
    int64_t priority = 0;
    int64_t seq = 0;
    uint64_t arrival = 0;  // insertion order: breaks ties between equal keys
    std::string id;
    const Workload* workload = nullptr;  // the one given to Insert (not part of the order)
    const std::string* shape = nullptr;  // its group's key, while the entry is queued
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
  // Entries of one shape in queue order; also searchable by an Entry.
  struct ByOrder {
    using is_transparent = void;
    bool operator()(const_iterator a, const_iterator b) const { return *a < *b; }
    bool operator()(const_iterator a, const Entry& b) const { return *a < b; }
    bool operator()(const Entry& a, const_iterator b) const { return a < *b; }
  };
  using ShapeSet = std::set<const_iterator, ByOrder>;
  using Shapes = std::unordered_map<std::string, ShapeSet>;

  // Queues `w` behind every entry that compares equal to it, in the group
  // of `shape`. A workload already queued under the same id is replaced.
  // The entry points to `w`, which must outlive it (the engine gives its
  // own copy).
  void Insert(const Workload& w, double score, const std::string& shape = {});
  // Forgets `id`; false when it is not queued.
  bool Erase(const std::string& id);
  // Forgets the entry at `it`; the iterator to the entry after it.
  const_iterator Erase(const_iterator it);
  bool Contains(const std::string& id) const { return index_.count(id) > 0; }
  // The 1-based place of `id` in queue order; 0 when it is not queued.
  size_t Position(const std::string& id) const;
  // The number of entries before `e` in queue order (O(log n)).
  size_t CountBefore(const Entry& e) const { return entries_.order_of_key(e); }
  // The entry of `id` and its shape; end() and nullptr when not queued.
  const_iterator Find(const std::string& id) const;
  const std::string* ShapeOf(const std::string& id) const;
  // The queued entries by shape; a shape with no entry left is absent.
  const Shapes& shapes() const { return shapes_; }

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
    std::unordered_map<std::string, Indexed> index;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      Indexed& i = index[it->id];
      i.it = it;
      i.shape = index_.at(it->id).shape;
    }
    for (auto& [shape, set] : shapes_) set.clear();
    for (auto& [id, i] : index) i.shape->second.insert(i.it);
    index_.swap(index);
  }

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  struct Indexed {
    const_iterator it;
    Shapes::iterator shape;  // stable: an unordered_map's nodes do not move
  };
  void Unlink(const Indexed& i);

  Tree entries_;
  std::unordered_map<std::string, Indexed> index_;
  Shapes shapes_;
  uint64_t next_arrival_ = 0;
};

}  // namespace tau::sched
