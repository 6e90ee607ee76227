#include "exec/cgroup.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

namespace tau::exec {
namespace fs = std::filesystem;

namespace {

Status WriteFile(const fs::path& path, const std::string& value) {
  std::ofstream out(path);
  if (!out) return ErrnoError(errno, fmt::format("open {}", path.string()));
  out << value;
  out.flush();
  if (!out) return ErrnoError(errno, fmt::format("write {} to {}", value, path.string()));
  return Status::Ok();
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

Status Cgroup2Driver::Enable() {
  std::string controllers = " " + ReadFile(parent_ / "cgroup.controllers") + " ";
  std::string missing;
  for (const char* c : {"cpu", "memory", "pids"}) {
    if (controllers.find(std::string(" ") + c + " ") == std::string::npos &&
        controllers.find(std::string(" ") + c + "\n") == std::string::npos) {
      missing += missing.empty() ? c : std::string(", ") + c;
    }
  }
  if (!missing.empty()) {
    return FailedPreconditionError(fmt::format("{} does not offer the {} controller{}", parent_.string(), missing,
                                               missing.find(',') == std::string::npos ? "" : "s"));
  }
  Status st = WriteFile(parent_ / "cgroup.subtree_control", "+cpu +memory +pids");
  if (!st.ok()) return FailedPreconditionError(st.message());
  return Status::Ok();
}

Result<std::string> Cgroup2Driver::CreateLeaf(const std::string& name, const CgroupLimits& limits) {
  fs::path leaf = parent_ / name;
  std::error_code ec;
  fs::create_directory(leaf, ec);
  if (ec) return ErrnoError(ec.value(), fmt::format("create cgroup {}", leaf.string()));
  constexpr int64_t kPeriodUs = 100000;
  int64_t quota = std::max<int64_t>(1000, limits.cpus_milli * kPeriodUs / 1000);
  TAU_RETURN_IF_ERROR(WriteFile(leaf / "cpu.max", fmt::format("{} {}", quota, kPeriodUs)));
  TAU_RETURN_IF_ERROR(WriteFile(leaf / "memory.max", std::to_string(limits.memory_bytes)));
  TAU_RETURN_IF_ERROR(WriteFile(leaf / "pids.max", std::to_string(limits.pids)));
  return leaf.string();
}

bool Cgroup2Driver::OomKilled(const std::string& leaf) {
  std::istringstream events(ReadFile(fs::path(leaf) / "memory.events"));
  std::string key;
  int64_t value = 0;
  while (events >> key >> value) {
    if (key == "oom_kill" && value > 0) return true;
  }
  return false;
}

Status Cgroup2Driver::Remove(const std::string& leaf) {
  std::error_code ec;
  if (!fs::exists(leaf, ec)) return Status::Ok();
  if (fs::exists(fs::path(leaf) / "cgroup.kill", ec)) (void)WriteFile(fs::path(leaf) / "cgroup.kill", "1");
  if (::rmdir(leaf.c_str()) == 0) return Status::Ok();
  if (errno == ENOTEMPTY || errno == EEXIST) {
    // A fake cgroupfs holds plain files; a real cgroup's files go with rmdir.
    for (const auto& entry : fs::directory_iterator(leaf, ec)) {
      if (entry.is_regular_file(ec)) fs::remove(entry.path(), ec);
    }
    if (::rmdir(leaf.c_str()) == 0) return Status::Ok();
  }
  return ErrnoError(errno, fmt::format("remove cgroup {}", leaf));
}

Result<std::unique_ptr<Cgroup2Driver>> DetectCgroup2(const fs::path& cgroup_root) {
  std::istringstream self(ReadFile("/proc/self/cgroup"));
  std::string line, path;
  while (std::getline(self, line)) {
    if (line.starts_with("0::")) path = line.substr(3);
  }
  if (path.empty()) return FailedPreconditionError("this process is in no cgroup v2 hierarchy");
  std::error_code ec;
  fs::path own = cgroup_root / fs::path(path).relative_path();
  if (!fs::exists(own / "cgroup.controllers", ec)) {
    return FailedPreconditionError(fmt::format("{} is not a cgroup v2 folder (a hybrid or v1 host)", own.string()));
  }
  // Move ourselves out of the inner cgroup, then delegate to jobs/.
  fs::path daemon = own / "taugridd";
  fs::create_directory(daemon, ec);
  if (ec) return FailedPreconditionError(fmt::format("cannot create {}: {}", daemon.string(), ec.message()));
  if (Status st = WriteFile(daemon / "cgroup.procs", std::to_string(::getpid())); !st.ok()) {
    return FailedPreconditionError(st.message());
  }
  auto own_driver = std::make_unique<Cgroup2Driver>(own);
  TAU_RETURN_IF_ERROR(own_driver->Enable());
  fs::path jobs = own / "jobs";
  fs::create_directory(jobs, ec);
  if (ec) return FailedPreconditionError(fmt::format("cannot create {}: {}", jobs.string(), ec.message()));
  auto driver = std::make_unique<Cgroup2Driver>(jobs);
  TAU_RETURN_IF_ERROR(driver->Enable());
  return driver;
}

}  // namespace tau::exec
