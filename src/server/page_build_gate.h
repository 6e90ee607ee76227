#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace tau::server {

// Bounds how many heavy answers (pages of the job list) are built at once.
// Each API connection has a thread of its own, so without a bound N
// concurrent requests hold N pages in memory at once; building more pages
// at once than there are cores gains nothing on CPU-bound work. A request
// that finds the gate full waits for a slot; it is never refused.
//
// When the last build inside ends, `on_idle` runs (outside the lock): the
// daemon passes TrimHeap, which hands the memory freed by the burst back to
// the system.
class PageBuildGate {
 public:
  // A slot held for one build; leaving it (destruction) lets a waiter in.
  class Slot {
   public:
    explicit Slot(PageBuildGate* gate) : gate_(gate) {}
    Slot(Slot&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (gate_) gate_->Leave();
    }

   private:
    PageBuildGate* gate_;
  };

  // `bound` is raised to 1 when lower.
  explicit PageBuildGate(size_t bound, std::function<void()> on_idle = {});

  // Waits until fewer than `bound` builds are inside, then enters.
  Slot Enter();

  size_t bound() const { return bound_; }
  // Builds inside now, requests waiting now, and the most ever inside at
  // once (what tests check the bound by).
  size_t inside() const;
  size_t waiting() const;
  size_t peak() const;

  // The bound the daemon uses: the core count, at least 2.
  static size_t DefaultBound();

 private:
  void Leave();

  const size_t bound_;
  const std::function<void()> on_idle_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  size_t inside_ = 0;
  size_t waiting_ = 0;
  size_t peak_ = 0;
};

// Returns the heap memory malloc keeps free back to the system
// (malloc_trim on glibc; nothing elsewhere).
void TrimHeap();

// Caps glibc's malloc arenas at `arenas` (at least 1) unless
// MALLOC_ARENA_MAX is set in the environment, which then wins. glibc's
// default of 8 per core lets each of the API's many threads keep an arena
// of freed memory that TrimHeap only partly gives back. Nothing elsewhere.
void CapMallocArenas(size_t arenas);

}  // namespace tau::server
