#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "common/result.h"

namespace tau::exec {

// Per-attempt resource limits enforced by a cgroup v2 leaf.
struct CgroupLimits {
  int64_t cpus_milli = 0;    // cpu.max quota over a 100 ms period
  int64_t memory_bytes = 0;  // memory.max
  int64_t pids = 16384;      // pids.max
};

// The cgroup seam of the executor. Each rank of an attempt runs in a leaf
// of its own, which tau-shim joins before starting the job.
class CgroupDriver {
 public:
  virtual ~CgroupDriver() = default;
  // Creates the leaf `name` with `limits` and returns its path.
  virtual Result<std::string> CreateLeaf(const std::string& name, const CgroupLimits& limits) = 0;
  // Its path, whether or not it exists.
  virtual std::string LeafPath(const std::string& name) const = 0;
  // Whether the kernel's OOM killer killed a process in the leaf
  // (memory.events: oom_kill > 0).
  virtual bool OomKilled(const std::string& leaf) = 0;
  // Kills whatever is left in the leaf (cgroup.kill) and removes it.
  virtual Status Remove(const std::string& leaf) = 0;
};

// cgroup v2 through its file system: leaves are folders under `parent`,
// limits are files. Pointed at a temp folder it is the fake cgroupfs the
// tests use (writes create plain files there).
class Cgroup2Driver final : public CgroupDriver {
 public:
  explicit Cgroup2Driver(std::filesystem::path parent) : parent_(std::move(parent)) {}

  // Checks that `parent` offers the cpu, memory and pids controllers and
  // enables them for its children. FailedPrecondition naming what is
  // missing otherwise.
  Status Enable();

  Result<std::string> CreateLeaf(const std::string& name, const CgroupLimits& limits) override;
  std::string LeafPath(const std::string& name) const override { return (parent_ / name).string(); }
  bool OomKilled(const std::string& leaf) override;
  Status Remove(const std::string& leaf) override;

 private:
  std::filesystem::path parent_;
};

// Finds a cgroup v2 subtree taugridd may manage: the cgroup it runs in
// (/proc/self/cgroup, "0::/PATH") under `cgroup_root`. To respect the "no
// processes in inner cgroups" rule it moves itself into PATH/taugridd and
// puts jobs under PATH/jobs. FailedPrecondition with the reason when the
// host does not delegate writable cpu, memory and pids controllers (hybrid
// cgroup v1 hosts, containers without delegation).
Result<std::unique_ptr<Cgroup2Driver>> DetectCgroup2(const std::filesystem::path& cgroup_root = "/sys/fs/cgroup");

}  // namespace tau::exec
