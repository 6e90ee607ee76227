#include "exec/oom_evidence.h"

#include <fmt/format.h>

#include <csignal>
#include <fstream>
#include <string_view>

namespace tau::exec {

std::optional<int64_t> ReadOomKillCount(const std::filesystem::path& vmstat) {
  std::ifstream in(vmstat);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return std::nullopt;
}

namespace {

std::string Mib(int64_t bytes) { return fmt::format("{} MiB", bytes / (1024 * 1024)); }

}  // namespace

std::string OomKillEvidence(const OomClues& c) {
  if (c.signal != SIGKILL || !c.terminated_by.empty()) return "";
  std::string evidence;
  if (c.kills_before && c.kills_after && *c.kills_after > *c.kills_before) {
    evidence = fmt::format("the kernel's OOM kill count (/proc/vmstat oom_kill) rose from {} to {} while it ran",
                           *c.kills_before, *c.kills_after);
  }
  const int64_t peak = c.peak_rss_kb * 1024;
  if (c.limit_bytes > 0 && peak * 10 >= c.limit_bytes * 9) {
    if (!evidence.empty()) evidence += ", and ";
    evidence += fmt::format("its peak RSS ({}) reached {}% of its memory limit ({})", Mib(peak),
                            peak * 100 / c.limit_bytes, Mib(c.limit_bytes));
  }
  return evidence;
}

}  // namespace tau::exec
