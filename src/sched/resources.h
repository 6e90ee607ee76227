#pragma once

#include <cstdint>
#include <string>

namespace tau::sched {

// An amount of each resource the embedded engine tracks, in exact integers:
// milli-CPUs, bytes of memory, whole GPUs.
struct Resources {
  int64_t cpus_milli = 0;
  int64_t memory_bytes = 0;
  int64_t gpus = 0;

  bool FitsIn(const Resources& available) const {
    return cpus_milli <= available.cpus_milli && memory_bytes <= available.memory_bytes &&
           gpus <= available.gpus;
  }
  Resources& operator+=(const Resources& o) {
    cpus_milli += o.cpus_milli;
    memory_bytes += o.memory_bytes;
    gpus += o.gpus;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    cpus_milli -= o.cpus_milli;
    memory_bytes -= o.memory_bytes;
    gpus -= o.gpus;
    return *this;
  }
  friend bool operator==(const Resources&, const Resources&) = default;
};

// "2 CPUs, 4Gi memory, 1 GPU" for messages.
std::string Describe(const Resources& r);

}  // namespace tau::sched
