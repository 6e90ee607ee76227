#include "server/state_view.h"

namespace tau::server {

std::shared_ptr<const JobView> StateView::Resolve(const std::string& id_or_name) const {
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    if ((*it)->job.id == id_or_name) return *it;
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
