#include "sched/pending_queue.h"

namespace tau::sched {

void PendingQueue::Insert(const Workload& w, double score, const std::string& shape) {
  Erase(w.id);
  auto group = shapes_.try_emplace(shape).first;
  auto [it, inserted] = entries_.insert({score, w.priority, w.seq, next_arrival_++, w.id, &w, &group->first});
  group->second.insert(it);
  index_[w.id] = {it, group};
}

void PendingQueue::Unlink(const Indexed& i) {
  i.shape->second.erase(i.it);
  if (i.shape->second.empty()) shapes_.erase(i.shape);
}

bool PendingQueue::Erase(const std::string& id) {
  auto found = index_.find(id);
  if (found == index_.end()) return false;
  Unlink(found->second);
  entries_.erase(found->second.it);
  index_.erase(found);
  return true;
}

PendingQueue::const_iterator PendingQueue::Erase(const_iterator it) {
  auto found = index_.find(it->id);
  Unlink(found->second);
  index_.erase(found);
  return entries_.erase(it);
}

size_t PendingQueue::Position(const std::string& id) const {
  auto found = index_.find(id);
  if (found == index_.end()) return 0;
  return entries_.order_of_key(*found->second.it) + 1;
}

PendingQueue::const_iterator PendingQueue::Find(const std::string& id) const {
  auto found = index_.find(id);
  return found == index_.end() ? entries_.end() : found->second.it;
}

const std::string* PendingQueue::ShapeOf(const std::string& id) const {
  auto found = index_.find(id);
  return found == index_.end() ? nullptr : &found->second.shape->first;
}

}  // namespace tau::sched
