#include "server/state_view.h"

#include "common/log.h"
#include "server/job_history.h"

namespace tau::server {

std::shared_ptr<const JobView> StateView::Find(const std::string& id) const {
  auto it = by_id.find(id);
  return it == by_id.end() ? nullptr : jobs[it->second];
}

std::shared_ptr<const JobView> StateView::Resolve(const std::string& id_or_name) const {
  if (auto held = Find(id_or_name)) return held;
  if (history) {
    // The database knows every job, so it decides which is the newest of a
    // name (jobs_by_name index).
    auto found = history->Resolve(id_or_name, *this);
    if (found.ok()) return *found;
    log::Warn("jobs", "cannot read a job from the database", {{"job", id_or_name}, {"error", found.status().ToString()}});
    return nullptr;
  }
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    if ((*it)->job.name == id_or_name) return *it;
  }
  return nullptr;
}

void StatePublisher::Publish(std::shared_ptr<const StateView> view) {
  {
    std::lock_guard lock(mu_);
    current_ = std::move(view);
  }
  cv_.notify_all();
}

std::shared_ptr<const StateView> StatePublisher::Current() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::shared_ptr<const StateView> StatePublisher::WaitNewer(int64_t version,
                                                          std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return current_->version > version; });
  return current_;
}

}  // namespace tau::server
