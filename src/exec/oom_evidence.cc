#include "exec/oom_evidence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string_view>

#include "exec/proc_file.h"

namespace tau::exec {

std::optional<int64_t> ReadOomKillCount(const std::filesystem::path& vmstat) {
  // Read at every attempt's start on the control loop: one read(2), no
  // stream parsing of the other ~180 counters.
  auto text = ReadProcFile(vmstat.string(), 64 * 1024);
  if (!text) return std::nullopt;
  const std::string_view key = "oom_kill ";
  for (size_t at = 0; at < text->size();) {
    const size_t eol = std::min(text->find('\n', at), text->size());
    if (text->compare(at, key.size(), key) == 0) {
      const char* begin = text->c_str() + at + key.size();
      char* end = nullptr;
      errno = 0;
      const long long value = std::strtoll(begin, &end, 10);
      if (end == begin || errno != 0) return std::nullopt;
      return int64_t{value};
    }
    at = eol + 1;
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
