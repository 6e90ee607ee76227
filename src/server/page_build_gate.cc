#include "server/page_build_gate.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tau::server {

PageBuildGate::PageBuildGate(size_t bound, std::function<void()> on_idle)
    : bound_(std::max<size_t>(bound, 1)), on_idle_(std::move(on_idle)) {}

PageBuildGate::Slot PageBuildGate::Enter() {
  std::unique_lock lock(mu_);
  ++waiting_;
  freed_.wait(lock, [&] { return inside_ < bound_; });
  --waiting_;
  ++inside_;
  peak_ = std::max(peak_, inside_);
  return Slot(this);
}

void PageBuildGate::Leave() {
  bool idle = false;
  {
    std::lock_guard lock(mu_);
    --inside_;
    idle = inside_ == 0;
  }
  freed_.notify_one();
  if (idle && on_idle_) on_idle_();
}

size_t PageBuildGate::inside() const {
  std::lock_guard lock(mu_);
  return inside_;
}

size_t PageBuildGate::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

size_t PageBuildGate::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

size_t PageBuildGate::DefaultBound() { return std::max<size_t>(std::thread::hardware_concurrency(), 2); }

void TrimHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void CapMallocArenas(size_t arenas) {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return;
  mallopt(M_ARENA_MAX, static_cast<int>(std::max<size_t>(arenas, 1)));
#else
  (void)arenas;
#endif
}

}  // namespace tau::server
