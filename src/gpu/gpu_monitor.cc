#include "gpu/gpu_monitor.h"

#include <algorithm>

#include "common/log.h"

namespace tau::gpu {

GpuMonitor::GpuMonitor(GpuSource* source, std::chrono::milliseconds poll_interval, Callbacks callbacks,
                       XidBackoff backoff)
    : source_(source), interval_(poll_interval), callbacks_(std::move(callbacks)), backoff_(backoff) {}

GpuMonitor::~GpuMonitor() { Stop(); }

void GpuMonitor::Start() {
  poller_ = std::thread([this] { PollLoop(); });
  waiter_ = std::thread([this] { EventLoop(); });
}

void GpuMonitor::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_events_ = true;
  cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  if (waiter_.joinable()) waiter_.join();
}

bool GpuMonitor::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return stopping_; });
}

void GpuMonitor::PollLoop() {
  const int count = static_cast<int>(source_->inventory().gpus.size());
  while (true) {
    for (int i = 0; i < count; ++i) callbacks_.on_sample(i, source_->Sample(i));
    if (!SleepFor(interval_)) return;
  }
}

void GpuMonitor::ReportUnreadable(std::map<int, std::string> now) {
  for (const auto& [g, why] : now) {
    auto before = unreadable_.find(g);
    if (before != unreadable_.end() && before->second == why) continue;
    log::Warn("gpu", "XID events of a GPU cannot be read; it is Suspect until they can",
              {{"gpu", std::to_string(g)}, {"reason", why}});
    if (callbacks_.on_xid_unreadable) callbacks_.on_xid_unreadable(g, why);
  }
  for (const auto& [g, why] : unreadable_) {
    if (now.count(g)) continue;
    log::Info("gpu", "XID events of a GPU are read again", {{"gpu", std::to_string(g)}});
    if (callbacks_.on_xid_unreadable) callbacks_.on_xid_unreadable(g, std::nullopt);
  }
  unreadable_ = std::move(now);
}

void GpuMonitor::EventLoop() {
  using std::chrono::milliseconds;
  using Clock = std::chrono::steady_clock;
  milliseconds backoff = backoff_.min_backoff;
  auto next_backoff = [&] {
    milliseconds d = backoff;
    backoff = std::min(backoff * 2, backoff_.max_backoff);
    return d;
  };
  std::vector<int> watched;  // GPUs in the event set while it works
  bool partial = false;      // some GPUs could not be registered
  bool unconfirmed = false;  // no wait on the set has succeeded yet
  std::optional<Clock::time_point> register_at = Clock::now();
  while (!stop_events_) {
    if (register_at && Clock::now() >= *register_at) {
      register_at.reset();
      auto reg = source_->RegisterXidEvents();
      if (!reg.ok() && reg.status().code() == StatusCode::kFailedPrecondition) {
        // Nothing to watch at all: faults are seen at the polls.
        log::Warn("gpu", "XID events are not available; faults are seen at the next poll only",
                  {{"reason", reg.status().message()}});
        ReportUnreadable({});
        return;
      }
      if (!reg.ok()) {
        // No event set: every GPU's events are unreadable until one is made.
        std::map<int, std::string> all;
        for (const GpuInfo& g : source_->inventory().gpus) all[g.index] = reg.status().message();
        ReportUnreadable(std::move(all));
        watched.clear();
        register_at = Clock::now() + next_backoff();
        continue;
      }
      watched = reg->watched;
      if (watched.empty() && reg->failed.empty()) {
        log::Info("gpu", "no GPU delivers XID events; faults are seen at the polls");
        ReportUnreadable({});
        return;
      }
      partial = !reg->failed.empty();
      // A GPU that was unreadable stays so until a wait on the new set
      // succeeds: registering proves nothing about reading.
      std::map<int, std::string> now = std::move(reg->failed);
      for (int g : watched) {
        if (auto it = unreadable_.find(g); it != unreadable_.end()) now[g] = it->second;
      }
      ReportUnreadable(std::move(now));
      unconfirmed = true;
      if (partial) register_at = Clock::now() + next_backoff();
    }
    if (watched.empty()) {
      // Nothing to wait on until the next registration.
      auto wait = register_at ? std::chrono::duration_cast<milliseconds>(*register_at - Clock::now()) : milliseconds(500);
      if (!SleepFor(std::max(wait, milliseconds(1)))) return;
      continue;
    }
    milliseconds wait(500);
    if (register_at) {
      wait = std::clamp(std::chrono::duration_cast<milliseconds>(*register_at - Clock::now()), milliseconds(1), wait);
    }
    auto event = source_->WaitXid(wait);
    if (!event.ok()) {
      // The set is broken: the GPUs it watched are unreadable until it is
      // made again.
      std::map<int, std::string> now = unreadable_;
      for (int g : watched) now[g] = event.status().message();
      ReportUnreadable(std::move(now));
      watched.clear();
      register_at = Clock::now() + next_backoff();
      continue;
    }
    if (unconfirmed) {
      // The set reads: its GPUs are readable again.
      unconfirmed = false;
      std::map<int, std::string> now = unreadable_;
      for (int g : watched) now.erase(g);
      ReportUnreadable(std::move(now));
      if (!partial) backoff = backoff_.min_backoff;
    }
    if (*event) callbacks_.on_xid(**event);
  }
}

}  // namespace tau::gpu
