#include "sched/pending_queue.h"

namespace tau::sched {

void PendingQueue::Insert(const Workload& w, double score) {
  Erase(w.id);
  auto [it, inserted] = entries_.insert({score, w.priority, w.seq, next_arrival_++, w.id});
  index_[w.id] = it;
}

bool PendingQueue::Erase(const std::string& id) {
  auto found = index_.find(id);
  if (found == index_.end()) return false;
  entries_.erase(found->second);
  index_.erase(found);
  return true;
}

PendingQueue::const_iterator PendingQueue::Erase(const_iterator it) {
  index_.erase(it->id);
  return entries_.erase(it);
}

size_t PendingQueue::Position(const std::string& id) const {
  auto found = index_.find(id);
  if (found == index_.end()) return 0;
  return entries_.order_of_key(*found->second) + 1;
}

}  // namespace tau::sched
