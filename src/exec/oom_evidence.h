#pragma once

// Telling an OOM kill without cgroup v2 (docs/checkpoints.md#oom-without-cgroups).
// With cgroups the leaf's memory.events says oom_kill for certain. Without
// them a rank runs under RLIMIT_DATA, which makes allocations fail rather
// than kill, so a SIGKILL that TauGrid did not send is the kernel's OOM
// killer (the machine ran out of memory) or someone's kill -9. Two clues
// tell them apart, neither needing privileges (dmesg is not read: it is
// restricted on most machines):
//   - the kernel's count of OOM kills (/proc/vmstat oom_kill, Linux 4.13+)
//     rose while the attempt ran: strong, though machine-wide, so an OOM
//     kill of another process at the same time as a kill -9 of this one
//     would be taken for this one's;
//   - its peak RSS reached 90 % of its memory limit: weaker, a job near
//     its limit killed by hand looks the same.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace tau::exec {

// The kernel's count of OOM kills since boot: the "oom_kill N" line of
// `vmstat`; nullopt when it cannot be read or has no such line.
std::optional<int64_t> ReadOomKillCount(const std::filesystem::path& vmstat = "/proc/vmstat");

struct OomClues {
  int signal = 0;              // the signal that killed the rank (0: none)
  std::string terminated_by;   // ExitStatus::terminated_by: "" when TauGrid did not stop it
  int64_t peak_rss_kb = 0;     // its peak RSS (0: unknown)
  int64_t limit_bytes = 0;     // its memory limit (RLIMIT_DATA; 0: none)
  std::optional<int64_t> kills_before;  // ReadOomKillCount when the attempt started
  std::optional<int64_t> kills_after;   // and when the rank ended
};

// The evidence, in words, that a rank was OOM-killed; "" when it was not
// (or nothing says so).
std::string OomKillEvidence(const OomClues& clues);

}  // namespace tau::exec
